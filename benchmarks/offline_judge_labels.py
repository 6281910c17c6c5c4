"""The offline judge against human-labelled hallucination data: how often it reads "ungrounded".

Not a test: it reads public data sets from paths you give it, grades every answer with
the offline judge and prints, for each source and set,

* precision and recall of "ungrounded" (score 1-2) against the answers' labels;
* flip detection: of the pairs (a faithful answer as baseline, a hallucinated one as
  candidate, same question), the share the judge reads as a flip (candidate
  ungrounded, baseline not);
* false alarms: the share of faithful answers read ungrounded (each one would be a
  flip against a grounded baseline).

Sources (none of them is stored in this repository; point the flags at your copies):

* HaluEval's QA pairs (RUCAIBox/HaluEval, MIT licence): `generation/qa/qa_one-turn_data.json`
  and `qa_multi-turn_data.json`, one JSON object a line with `knowledge`, `question`,
  `right_answer` and `hallucinated_answer`. Both files hold the same 500 questions, each
  with a different hallucinated answer. `--halueval DIR` reads both.
* RAGTruth's QA split (ParticleMedia/RAGTruth, MIT licence): `dataset/response.jsonl` and
  `dataset/source_info.jsonl` (`task_type` "QA"). `--ragtruth DIR` reads both; an answer is
  hallucinated when it has a label span, and a flip pairs a clean answer with a labelled
  one to the same source.

* A folder in the labelled-dev format (`--labelled-dev DIR`): for each source, `summary` and
  `data2txt`, `ragtruth_<source>_inputs.jsonl` (`source_id`, `query`, `context`),
  `ragtruth_<source>_pairs.jsonl` (`source_id`, a `clean` and a `hallucinated` answer, each with
  its `response`) and `ragtruth_<source>_responses.jsonl` (single answers with a `hallucinated`
  label). A pair is read as the gate reads a row (`grade_pair`, then `classify`), both ways:
  clean baseline and hallucinated candidate must be a regression (a flip caught), the reverse
  must not (a false alarm). Per source it prints flips caught, false alarms, answers set aside
  ("not judged offline") and faithful answers read ungrounded. Nothing in CI needs it.

Sets, so the figures stay honest: questions (HaluEval: by line number; RAGTruth: by
`source_id`) are split in two by a hash of their key. `tune` is the half the judge's rules
were adjusted on; `measure` is the half kept apart, read only to report.

    .venv/bin/python benchmarks/offline_judge_labels.py --halueval /tmp/halueval --set measure
    .venv/bin/python benchmarks/offline_judge_labels.py --ragtruth RAGTruth/dataset --set all
    .venv/bin/python benchmarks/offline_judge_labels.py --halueval /tmp/halueval --set tune --show 20
    .venv/bin/python benchmarks/offline_judge_labels.py --labelled-dev ../shared/labelled-dev
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flipgate.judges.offline import grade_groundedness, grade_pair
from flipgate.model import Case, Verdict
from flipgate.verdict.gate import classify, reads_ungrounded

HALUEVAL_FILES = ("qa_one-turn_data.json", "qa_multi-turn_data.json")


@dataclass(frozen=True)
class Item:
    key: str          # the question's key: which set it belongs to, and its pairs
    case: Case
    answer: str
    hallucinated: bool


def in_set(key: str, wanted: str) -> bool:
    if wanted == "all":
        return True
    half = hashlib.sha256(key.encode()).digest()[0] % 2
    return (half == 0) == (wanted == "tune")


def halueval(directory: Path) -> Iterator[Item]:
    seen: set[str] = set()
    for name in HALUEVAL_FILES:
        lines = (directory / name).read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            key = f"halueval:{number}"
            case = Case(id=key, query=row["question"], context=row["knowledge"])
            if key not in seen:  # the right answer is the same in both files
                seen.add(key)
                yield Item(key, case, row["right_answer"], hallucinated=False)
            yield Item(key, case, row["hallucinated_answer"], hallucinated=True)


def _ragtruth_context(info: dict[str, object]) -> tuple[str, str]:
    source = info.get("source_info")
    if isinstance(source, dict):
        return str(source.get("question", "")), str(source.get("passages", ""))
    return "", str(source or "")


def ragtruth(directory: Path) -> Iterator[Item]:
    sources = {}
    with (directory / "source_info.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            info = json.loads(line)
            if info.get("task_type") == "QA":
                sources[str(info["source_id"])] = _ragtruth_context(info)
    with (directory / "response.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            source_id = str(row["source_id"])
            if source_id not in sources:
                continue
            query, context = sources[source_id]
            key = f"ragtruth:{source_id}"
            yield Item(key, Case(id=f"{key}:{row['id']}", query=query, context=context),
                       row["response"], hallucinated=bool(row.get("labels")))


def ungrounded(item: Item) -> tuple[bool, str]:
    score = grade_groundedness(item.case, item.answer)
    return reads_ungrounded(score), score.reason


def report(name: str, items: list[Item], show: int) -> None:
    readings = [(item, *ungrounded(item)) for item in items]
    flagged = sum(1 for item, bad, _ in readings if bad)
    true_flags = sum(1 for item, bad, _ in readings if bad and item.hallucinated)
    hallucinated = sum(1 for item in items if item.hallucinated)
    clean = [(item, bad) for item, bad, _ in readings if not item.hallucinated]
    by_key: dict[str, list[tuple[Item, bool]]] = {}
    for item, bad, _ in readings:
        by_key.setdefault(item.key, []).append((item, bad))
    flips = caught = 0
    for pairs in by_key.values():
        for _base, base_bad in (p for p in pairs if not p[0].hallucinated):
            for _cand, cand_bad in (p for p in pairs if p[0].hallucinated):
                flips += 1
                caught += cand_bad and not base_bad
    false_alarms = sum(1 for _, bad in clean if bad)

    def share(part: int, whole: int) -> str:
        return f"{part / whole:6.1%} ({part}/{whole})" if whole else "   n/a"

    print(f"{name}: {len(items)} answers, {hallucinated} hallucinated")
    print(f"  precision of ungrounded  {share(true_flags, flagged)}")
    print(f"  recall of ungrounded     {share(true_flags, hallucinated)}")
    print(f"  flips detected           {share(caught, flips)}")
    print(f"  false alarms             {share(false_alarms, len(clean))}")
    if show:
        misses = [(item, reason) for item, bad, reason in readings if bad != item.hallucinated]
        for item, reason in misses[:show]:
            kind = "missed" if item.hallucinated else "false alarm"
            print(f"  - {kind}: Q {item.case.query!r}\n    A {item.answer!r}\n    {reason}")


# --- labelled-dev: RAGTruth summaries and data-to-text overviews, pairs and single answers ---

LABELLED_SOURCES = ("summary", "data2txt")


@dataclass(frozen=True)
class Pair:
    case: Case
    clean: str
    hallucinated: str


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def labelled_dev(directory: Path, source: str) -> tuple[list[Pair], list[Item]]:
    """One source of the labelled-dev folder: its pairs, and every single answer (the pairs'
    two sides and the natural-rate responses) with its label."""
    inputs = {row["source_id"]: row for row in _jsonl(directory / f"ragtruth_{source}_inputs.jsonl")}

    def case(source_id: str, key: str) -> Case:
        row = inputs[source_id]
        return Case(id=key, query=row["query"], context=row["context"])

    pairs, items = [], []
    for row in _jsonl(directory / f"ragtruth_{source}_pairs.jsonl"):
        one = case(row["source_id"], row["id"])
        pairs.append(Pair(one, row["clean"]["response"], row["hallucinated"]["response"]))
        items.append(Item(row["id"], one, row["clean"]["response"], hallucinated=False))
        items.append(Item(row["id"], one, row["hallucinated"]["response"], hallucinated=True))
    for row in _jsonl(directory / f"ragtruth_{source}_responses.jsonl"):
        items.append(Item(row["id"], case(row["source_id"], row["id"]), row["response"],
                          hallucinated=bool(row["hallucinated"])))
    return pairs, items


def is_flip(pair_case: Case, baseline: str, candidate: str) -> bool:
    """Would the gate call this pair a regression? (The offline judge re-reads, so its
    re-score is its first reading.)"""
    before, after = grade_pair(pair_case, baseline, candidate)
    verdict, _ = classify(before, after, after)
    return verdict is Verdict.REGRESSION


def report_labelled(directory: Path, show: int) -> None:
    print(f"labelled-dev ({directory}): pairs both ways, and every single answer")
    for source in LABELLED_SOURCES:
        pairs, items = labelled_dev(directory, source)
        caught = sum(is_flip(p.case, p.clean, p.hallucinated) for p in pairs)
        alarms = sum(is_flip(p.case, p.hallucinated, p.clean) for p in pairs)
        scores = [(item, grade_groundedness(item.case, item.answer)) for item in items]
        aside = sum(1 for _, score in scores if score.set_aside)
        clean = [(item, score) for item, score in scores if not item.hallucinated]
        read_bad = sum(1 for _, score in clean if reads_ungrounded(score))
        print(f"  {source}: {len(pairs)} pairs, {len(items)} answers ({len(clean)} faithful)")
        print(f"    flips caught                {_share(caught, len(pairs))}")
        print(f"    false alarms (pair reversed){_share(alarms, len(pairs))}")
        print(f"    answers set aside           {_share(aside, len(items))}")
        print(f"    faithful read ungrounded    {_share(read_bad, len(clean))}")
        for item, score in [(i, s) for i, s in clean if reads_ungrounded(s)][:show]:
            print(f"    - faithful read ungrounded {item.key}: {score.reason[:300]}")


def _share(part: int, whole: int) -> str:
    return f"{part / whole:6.1%} ({part}/{whole})" if whole else "   n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--halueval", type=Path, help="directory with HaluEval's two QA files")
    parser.add_argument("--ragtruth", type=Path, help="directory with RAGTruth's two jsonl files")
    parser.add_argument("--labelled-dev", type=Path,
                        help="a folder in the labelled-dev format (ragtruth_{summary,data2txt}_*.jsonl)")
    parser.add_argument("--set", choices=("tune", "measure", "all"), default="measure")
    parser.add_argument("--show", type=int, default=0, help="print this many misreadings")
    args = parser.parse_args(argv)
    if not (args.halueval or args.ragtruth or args.labelled_dev):
        parser.error("give --halueval DIR, --ragtruth DIR, --labelled-dev DIR or several")
    if args.labelled_dev:
        report_labelled(args.labelled_dev, args.show)
    for name, reader, path in (("HaluEval QA", halueval, args.halueval),
                               ("RAGTruth QA", ragtruth, args.ragtruth)):
        if path is None:
            continue
        items = [item for item in reader(path) if in_set(item.key, args.set)]
        report(f"{name} [{args.set}]", items, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
