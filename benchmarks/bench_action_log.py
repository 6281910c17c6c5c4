"""Watch `flipgate action`'s job log on a large pull request, line by line as it arrives.

Not a test: it runs the real action (its own process, as the container does)
against the loopback GitHub and OpenAI servers on a temporary repository with
N cases and a fixed latency per model request, timestamps every log line, and
prints what the issue asks of the log: a progress line at least every 10
seconds with an ETA, the verdict table at the end, one `::error` per
judge-error row (three rows are made to break the judge).

    .venv/bin/pip install -q -e '.[test]'
    .venv/bin/python benchmarks/bench_action_log.py --cases 300 --latency 0.1
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

# The tests' loopback servers and git helper.
from support.github_server import FakeGitHub  # noqa: E402
from support.gitrepo import GitRepo  # noqa: E402
from support.openai_server import FakeOpenAI  # noqa: E402

PR = 7
CONFIG = ("version: 1\ncases: eval/cases.jsonl\ngenerator: prompts/answer.prompty\n"
          "judge:\n  provider: openai\n  model: judge-1\ngate:\n  blocking_categories: [policy]\n")
PROMPT = ("---\nmodel:\n  configuration:\n    type: openai\n    model: gen-1\n"
          "  parameters:\n    temperature: 0\n---\nsystem:\n{system}\nuser:\n"
          "Context: {{{{context}}}}\nQuestion: {{{{query}}}}\n")


def cases(n: int) -> str:
    rows = [{"id": f"case-{i:03d}", "category": "policy" if i % 2 else "cards",
             "query": f"What does rule {i} say?",
             "context": f"Rule {i} says refunds are issued within {i % 30 + 1} days."}
            for i in range(n)]
    rows += [{"id": f"broken-{i}", "category": "cards", "query": "What breaks the judge?",
              "context": f"Refunds break judge number {i}."} for i in range(3)]
    return "".join(json.dumps(row) + "\n" for row in rows)


def generation(body: dict) -> str:
    context = body["messages"][-1]["content"].split("Context: ", 1)[1].split("\n", 1)[0]
    generous = "helpful" in body["messages"][0]["content"]
    return context + (" A 12 dollar fee applies." if generous and "rule 1 " in context else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per model request")
    args = parser.parse_args()

    github, openai = FakeGitHub(), FakeOpenAI()
    openai.latency = args.latency
    openai.on_generation(generation)
    openai.on_groundedness(lambda query, context, response, call_index:
                           "not json" if "break judge" in (response or "") else
                           (1 if "12 dollar" in (response or "") else 5))
    github.start()
    openai.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            repo = GitRepo.create(work / "repo")
            base = repo.commit({".flipgate.yml": CONFIG, "eval/cases.jsonl": cases(args.cases),
                                "prompts/answer.prompty": PROMPT.format(system="Answer from the context.")})
            head = repo.commit({"prompts/answer.prompty": PROMPT.format(system="Be helpful.")})
            github.add_pull(PR, base_sha=base, head_sha=head)
            event = json.loads((ROOT / "tests/fixtures/github/pull_request.synchronize.json").read_text())
            pull = event["pull_request"]
            event["number"] = pull["number"] = PR
            pull["base"]["repo"]["full_name"] = github.repository
            # The base branch and the default branch as the loopback GitHub serves them.
            pull["base"]["ref"] = pull["base"]["repo"]["default_branch"] = "main"
            pull["base"]["sha"], pull["head"]["sha"] = base, head
            pull["head"]["repo"] = copy.deepcopy(pull["base"]["repo"])
            (work / "event.json").write_text(json.dumps(event))
            env = {"PATH": os.environ["PATH"], "HOME": str(work),
                   "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(work / "event.json"),
                   "GITHUB_REPOSITORY": github.repository, "GITHUB_API_URL": github.api_url,
                   "GITHUB_WORKSPACE": str(repo.path), "GITHUB_RUN_ID": "1",
                   "GITHUB_OUTPUT": str(work / "output"), "GITHUB_STEP_SUMMARY": str(work / "summary"),
                   "INPUT_GITHUB-TOKEN": github.token, "INPUT_OPENAI-API-KEY": "bench",
                   "OPENAI_BASE_URL": openai.base_url}
            started = time.monotonic()
            lines: list[tuple[float, str]] = []
            with subprocess.Popen([sys.executable, "-m", "flipgate", "action"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as child:
                assert child.stdout is not None
                for line in child.stdout:
                    lines.append((time.monotonic() - started, line.rstrip("\n")))
            exit_code = child.returncode
    finally:
        openai.stop()
        github.stop()

    progress = [(at, line) for at, line in lines if line.startswith("flipgate: generation")]
    gaps = [b - a for (a, _), (b, _) in zip(progress, progress[1:], strict=False)]
    errors = [line for _, line in lines if line.startswith("::error") and "judge error: " in line]
    print(f"cases             {args.cases} (+3 that break the judge), {args.latency * 1000:.0f} ms "
          f"per request, {len(openai.requests)} requests")
    print(f"exit code         {exit_code}")
    print(f"wall time         {lines[-1][0] if lines else 0:.1f}s")
    print(f"progress lines    {len(progress)}; longest gap {max(gaps, default=0):.1f}s; "
          f"with an ETA: {sum('ETA ' in line and 'unknown' not in line for _, line in progress)}")
    grouped = any("::group::flipgate: verdict table" in line for _, line in lines)
    print(f"verdict table     {'in a group' if grouped else 'MISSING'}")
    print(f"::error per row   {len(errors)} (3 expected)")
    for at, line in progress:
        print(f"  {at:6.1f}s  {line}")
    return 0 if exit_code == 3 and len(errors) == 3 and max(gaps, default=0) <= 10.5 else 1


if __name__ == "__main__":
    sys.exit(main())
