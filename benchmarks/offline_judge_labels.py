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

Sets, so the figures stay honest: questions (HaluEval: by line number; RAGTruth: by
`source_id`) are split in two by a hash of their key. `tune` is the half the judge's rules
were adjusted on; `measure` is the half kept apart, read only to report.

    .venv/bin/python benchmarks/offline_judge_labels.py --halueval /tmp/halueval --set measure
    .venv/bin/python benchmarks/offline_judge_labels.py --ragtruth RAGTruth/dataset --set all
    .venv/bin/python benchmarks/offline_judge_labels.py --halueval /tmp/halueval --set tune --show 20
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from flipgate.judges.offline import grade_groundedness
from flipgate.model import Case
from flipgate.verdict.gate import reads_ungrounded

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--halueval", type=Path, help="directory with HaluEval's two QA files")
    parser.add_argument("--ragtruth", type=Path, help="directory with RAGTruth's two jsonl files")
    parser.add_argument("--set", choices=("tune", "measure", "all"), default="measure")
    parser.add_argument("--show", type=int, default=0, help="print this many misreadings")
    args = parser.parse_args(argv)
    if not (args.halueval or args.ragtruth):
        parser.error("give --halueval DIR, --ragtruth DIR or both")
    for name, reader, path in (("HaluEval QA", halueval, args.halueval),
                               ("RAGTruth QA", ragtruth, args.ragtruth)):
        if path is None:
            continue
        items = [item for item in reader(path) if in_set(item.key, args.set)]
        report(f"{name} [{args.set}]", items, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
