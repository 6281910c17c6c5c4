"""Attacks from the end-to-end run's retriever: its replies, its output, the base export it
runs in, and the process it runs as. The end-to-end run never blocks, so none of this may
cost the frozen verdict: every failure is an error on its row, and the report is written.

The retriever is the base's, so it is trusted to retrieve, but not with flipgate's secrets:
it must not read the model key from flipgate's process (`/proc/PID/environ`)."""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.confine import hide_this_process
from flipgate.e2e.retrieval import (
    MAX_CONTEXT_BYTES,
    CommandRetriever,
    HttpRetriever,
    RetrievalError,
)
from flipgate.model import Case

from support.accounts import alive, command_python
from support.bombs import MiB, bomb, traced_peak
from support.gitrepo import GitRepo
from support.hostile_http import HostileHTTP, Request, Send, drip, flood, head, reply
from support.openai_server import FakeOpenAI
from support.prompts import ANSWER_FROM_CONTEXT

CASES = [{"id": f"q{i}", "query": f"What is the fee for item {i}?",
          "context": f"The fee for item {i} is ${i}.", "category": "pricing"} for i in range(3)]
CASES_TEXT = "".join(json.dumps(c) + "\n" for c in CASES)
PROMPT = ANSWER_FROM_CONTEXT
HEAD_PROMPT = PROMPT.replace("gpt-4o-mini", "gpt-4.1")
CASE = Case(id="q1", query="What is the fee?", context="The fee is $1.", category="pricing")
SECRET = "sk-flipgate-test-secret-7f3a9c"
PYTHON = command_python()


def config(e2e: str) -> str:
    return f"version: 1\ncases: eval/cases.jsonl\ngenerator: prompts/answer.prompty\n" \
           f"judge:\n  provider: offline\ne2e:\n{e2e}"


def make_repo(tmp_path: Path, e2e: str, files: dict[str, str] | None = None) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": config(e2e), "eval/cases.jsonl": CASES_TEXT,
                 "prompts/answer.prompty": PROMPT, **(files or {})}, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    return repo


def run_e2e(repo: GitRepo, tmp_path: Path) -> tuple[int, str, dict | None]:
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                      "--out", str(tmp_path / "out"), "--no-cache", "--e2e"])
    path = tmp_path / "out" / "report.json"
    return result.exit_code, result.output, json.loads(path.read_text()) if path.exists() else None


def assert_frozen_verdict_kept(code: int, output: str, report: dict | None) -> dict[str, dict]:
    assert code == 0, output
    assert report is not None
    assert [row["id"] for row in report["rows"]] == ["q0", "q1", "q2"]
    return {row["id"]: row for row in report["e2e"]["rows"]}


# -- hostile HTTP replies, through `flipgate run --e2e` -------------------------------------

def json_reply(body: str) -> callable:
    def handler(request: Request, send: Send) -> None:
        send(reply(200, body.encode()))
    return handler


@pytest.mark.parametrize("body", [
    '{"context": ' + "[" * 100_000 + "]" * 100_000 + "}",              # RecursionError
    '{"context": "a", "n": ' + "9" * 5000 + "}",                         # int digit limit
    '{"context": "\\ud800 lone surrogate"}',                             # unwritable as UTF-8
    '{"context": NaN}',
    "[" * 100_000,
], ids=["nested", "long-number", "lone-surrogate", "nan", "unterminated-nesting"])
def test_a_hostile_json_reply_is_a_row_error_and_the_frozen_verdict_stands(
        openai_server: FakeOpenAI, tmp_path: Path, body: str) -> None:
    with HostileHTTP(json_reply(body)) as server:
        repo = make_repo(tmp_path, f"  url: {server.url}/retrieve\n  timeout: 5\n")
        code, output, report = run_e2e(repo, tmp_path)

    rows = assert_frozen_verdict_kept(code, output, report)
    assert all(row["e2e_verdict"] is None and "live retrieval failed" in row["error"]
               for row in rows.values())


def test_a_slow_drip_body_times_out_at_e2e_timeout_in_a_full_run(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    def handler(request: Request, send: Send) -> None:
        send(head(200, length=1000))
        drip(send, b'{"context": "' + b"a" * 900 + b'"}', every=0.5)   # 450 s, unbounded

    with HostileHTTP(handler) as server:
        repo = make_repo(tmp_path, f"  url: {server.url}/retrieve\n  timeout: 1\n")
        started = time.monotonic()
        code, output, report = run_e2e(repo, tmp_path)

    rows = assert_frozen_verdict_kept(code, output, report)
    assert all(row["error"].startswith("live retrieval failed: ") for row in rows.values())
    assert "live retrieval failed: timed out after 1 s" in [row["error"] for row in rows.values()]
    assert time.monotonic() - started < 60


# -- the HTTP retriever on its own: deadlines and caps ---------------------------------------

async def fetch_http(url: str, *, timeout: float) -> str:
    async with httpx.AsyncClient() as client:
        retriever = HttpRetriever(url=url, headers={}, timeout=timeout, client=client)
        return await retriever.fetch(CASE)


def test_a_body_of_one_byte_a_second_ends_at_the_total_deadline_not_per_read() -> None:
    def handler(request: Request, send: Send) -> None:
        send(head(200, length=100, content_type="text/plain"))
        drip(send, b"x" * 100, every=0.3)   # each read well inside the timeout

    with HostileHTTP(handler) as server:
        started = time.monotonic()
        with pytest.raises(RetrievalError, match="timed out after 1.5 s"):
            asyncio.run(fetch_http(server.url, timeout=1.5))
        assert time.monotonic() - started < 3


def test_headers_that_never_end_end_at_the_deadline() -> None:
    def handler(request: Request, send: Send) -> None:
        send(b"HTTP/1.1 200 OK\r\n")
        drip(send, b"x-pad: " + b"a" * 100, every=0.3)

    with HostileHTTP(handler) as server:
        started = time.monotonic()
        with pytest.raises(RetrievalError, match="timed out"):
            asyncio.run(fetch_http(server.url, timeout=1))
        assert time.monotonic() - started < 3


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked-no-length"])
def test_a_250_mb_body_is_cut_at_the_cap_without_reading_it_all(declared: bool) -> None:
    total = 250 * 1024 * 1024

    def handler(request: Request, send: Send) -> None:
        send(head(200, length=total if declared else None, content_type="text/plain"))
        flood(send, total)

    with HostileHTTP(handler) as server:
        with pytest.raises(RetrievalError, match="more than"):
            asyncio.run(fetch_http(server.url, timeout=30))
        time.sleep(0.2)
        assert server.sent_bytes and server.sent_bytes[0] < 64 * 1024 * 1024


def test_a_body_just_under_the_cap_is_read() -> None:
    text = "a" * (MAX_CONTEXT_BYTES - 10)

    with HostileHTTP(lambda r, send: send(reply(200, text.encode(), content_type="text/plain"))) as server:
        assert asyncio.run(fetch_http(server.url, timeout=10)) == text


@pytest.mark.parametrize("twice", [False, True], ids=["gzip", "gzip-gzip"])
def test_a_compressed_answer_that_inflates_past_the_cap_is_cut_in_bounded_memory(
        twice: bool) -> None:
    # 64 MiB from a few hundred KB (or, encoded twice over, from a few KB): the cap counts
    # what the answer inflates to, and no step inflates more than a piece at a time.
    body = bomb("gzip", 64 * MiB)
    if twice:
        body = zlib.compress(body, 9, wbits=zlib.MAX_WBITS | 16)
    encoding = "gzip, gzip" if twice else "gzip"

    def handler(request: Request, send: Send) -> None:
        send(reply(200, body, content_type="text/plain", extra={"content-encoding": encoding}))

    with HostileHTTP(handler) as server, traced_peak() as traced:
        with pytest.raises(RetrievalError, match=f"more than {MAX_CONTEXT_BYTES:,} bytes"):
            asyncio.run(fetch_http(server.url, timeout=30))
    assert traced["peak"] < 8 * MAX_CONTEXT_BYTES
    assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"


def test_control_a_compressed_answer_under_the_cap_is_read() -> None:
    body = zlib.compress(b"The fee is $1.", 6, wbits=zlib.MAX_WBITS | 16)

    def handler(request: Request, send: Send) -> None:
        send(reply(200, body, content_type="text/plain", extra={"content-encoding": "gzip"}))

    with HostileHTTP(handler) as server:
        assert asyncio.run(fetch_http(server.url, timeout=10)) == "The fee is $1."


def test_an_answer_in_an_encoding_flipgate_cannot_bound_is_an_error() -> None:
    def handler(request: Request, send: Send) -> None:
        send(reply(200, b"\x1b" * 50, content_type="text/plain", extra={"content-encoding": "br"}))

    with HostileHTTP(handler) as server:
        with pytest.raises(RetrievalError, match="content-encoding 'br' is not one flipgate reads"):
            asyncio.run(fetch_http(server.url, timeout=10))


# -- the command: output caps, stragglers ----------------------------------------------------

def command(tmp_path: Path, script: str, *, timeout: float = 10) -> CommandRetriever:
    (tmp_path / "cmd.py").write_text(script)
    return CommandRetriever(argv=[sys.executable, str(tmp_path / "cmd.py")], cwd=tmp_path,
                            env={"PATH": os.environ["PATH"]}, timeout=timeout)


def test_a_command_printing_250_mb_is_cut_at_the_cap(tmp_path: Path) -> None:
    retriever = command(tmp_path, "import sys\nchunk = b'x' * 1048576\n"
                                  "for _ in range(250):\n    sys.stdout.buffer.write(chunk)\n")
    started = time.monotonic()
    with pytest.raises(RetrievalError, match="printed more than"):
        asyncio.run(retriever.fetch(CASE))
    assert time.monotonic() - started < 5


def test_a_command_flooding_stderr_keeps_only_the_tail(tmp_path: Path) -> None:
    retriever = command(tmp_path, "import sys\nchunk = b'e' * 1048576\n"
                                  "for _ in range(250):\n    sys.stderr.buffer.write(chunk)\n"
                                  "sys.stderr.write('\\nlast words')\nsys.exit(4)\n")
    with pytest.raises(RetrievalError, match="status 4: last words") as caught:
        asyncio.run(retriever.fetch(CASE))
    assert len(str(caught.value)) < 1000


def test_a_command_that_never_closes_stdout_ends_at_the_timeout(tmp_path: Path) -> None:
    retriever = command(tmp_path, "import sys, time\nprint('partial', flush=True)\ntime.sleep(60)\n",
                        timeout=1)
    started = time.monotonic()
    with pytest.raises(RetrievalError, match="timed out after 1 s"):
        asyncio.run(retriever.fetch(CASE))
    assert time.monotonic() - started < 4


def test_a_command_leaving_a_child_behind_has_it_killed(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    retriever = command(tmp_path, "import os, subprocess, sys, time\n"
                                  f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
                                  " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
                                  f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
                                  "print('context')\n")
    assert asyncio.run(retriever.fetch(CASE)) == "context"
    pid = int(marker.read_text())
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.05)
    assert not alive(pid)


# -- the base export ---------------------------------------------------------------------------

RETRIEVE = "import sys\nsys.stdin.read()\nprint(open('scripts/context.txt').read().strip())\n"


@pytest.mark.parametrize("links", [
    {"scripts/passwd": "/etc/passwd"},
    {"scripts/up": "../../../../../../etc"},
    {"scripts/root": "/", "scripts/inner": "context.txt"},
], ids=["absolute", "relative-out", "root-and-inner"])
def test_symlinks_in_the_base_export_do_not_stop_the_run(
        openai_server: FakeOpenAI, tmp_path: Path, links: dict[str, str]) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.write({".flipgate.yml": config(f"  command: {PYTHON} scripts/retrieve.py\n  timeout: 20\n"),
                "eval/cases.jsonl": CASES_TEXT, "prompts/answer.prompty": PROMPT,
                "scripts/retrieve.py": RETRIEVE, "scripts/context.txt": "Live context."})
    for name, target in links.items():
        (repo.path / name).symlink_to(target)
        repo.git("add", name)
    repo.commit({}, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})

    code, output, report = run_e2e(repo, tmp_path)

    rows = assert_frozen_verdict_kept(code, output, report)
    assert [(row["live_context"], row.get("error")) for row in rows.values()] == \
        [("Live context.", None)] * 3


# -- the command cannot read flipgate's secrets ------------------------------------------------

SNOOP = r"""import os, sys
sys.stdin.read()
secret = os.environ["SNOOP_NEEDLE"][::-1]   # the key, spelt backwards in this environment
found = []
def look(pid, ancestor=False):
    for name in ("environ", "cmdline"):
        try:
            data = open(f"/proc/{pid}/{name}", "rb").read()
        except OSError:
            continue
        if secret.encode() in data:
            found.append(f"{pid}/{name}")
    if ancestor:  # flipgate's own memory holds the key too
        try:
            with open(f"/proc/{pid}/mem", "rb") as mem:
                found.append(f"{pid}/mem-open")
        except OSError:
            pass
pid = os.getppid()
chain = []
while pid > 1:                     # the parent, its parent, ...
    chain.append(pid)
    look(pid, ancestor=True)
    status = open(f"/proc/{pid}/status").read()
    pid = int(status.split("PPid:")[1].split()[0])
for entry in os.listdir("/proc"):  # and every process this user can see
    if entry.isdigit() and int(entry) != os.getpid():
        look(entry)
print("FOUND " + " ".join(sorted(set(found))) if found else "CLEAN")
"""


def test_the_command_cannot_read_the_model_key_from_flipgates_process(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    """flipgate runs as a real process with the key in its initial environment (what
    /proc/PID/environ shows); the command walks up its parents and every /proc entry."""
    repo = make_repo(tmp_path, f"  command: {PYTHON} scripts/snoop.py\n  timeout: 20\n"
                               "  env: [SNOOP_NEEDLE]\n", {"scripts/snoop.py": SNOOP})
    flipgate = shutil.which("flipgate", path=str(Path(sys.executable).parent))
    assert flipgate
    env = {**os.environ, "OPENAI_API_KEY": SECRET, "SNOOP_NEEDLE": SECRET[::-1],
           "OPENAI_BASE_URL": openai_server.base_url}
    result = subprocess.run([flipgate, "run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                             "--out", str(tmp_path / "out"), "--no-cache", "--e2e"],
                            env=env, capture_output=True, text=True, timeout=120)
    report = json.loads((tmp_path / "out" / "report.json").read_text())

    rows = assert_frozen_verdict_kept(result.returncode, result.stderr, report)
    assert [(row["live_context"], row.get("error")) for row in rows.values()] == [("CLEAN", None)] * 3


def test_a_process_of_the_same_uid_cannot_read_a_hidden_process_environ() -> None:
    """Without root (no other account to run the command as), flipgate hides itself from
    its own uid. Two forked children of one uid: the target hides, the attacker reads."""
    def as_one_account() -> None:
        if os.geteuid() == 0:
            os.setgid(65534)
            os.setuid(65534)

    def attempt(hide: bool) -> bool:
        ready_r, ready_w = os.pipe()
        target = os.fork()
        if target == 0:  # the target: flipgate, holding the key
            try:
                as_one_account()
                # A changed uid leaves a process non-dumpable; an exec'd one (flipgate) is not.
                ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
                if hide:
                    hide_this_process()
                os.write(ready_w, b"x")
                time.sleep(10)
            finally:
                os._exit(0)
        os.read(ready_r, 1)
        attacker = os.fork()
        if attacker == 0:  # the retrieval command, same uid
            code = 1
            try:
                as_one_account()
                with open(f"/proc/{target}/environ", "rb") as handle:
                    handle.read()
                code = 0
            except OSError:
                pass
            os._exit(code)
        _, status = os.waitpid(attacker, 0)
        os.kill(target, 9)
        os.waitpid(target, 0)
        return os.waitstatus_to_exitcode(status) == 0

    assert attempt(hide=False)          # the attack works on a plain process
    assert not attempt(hide=True)       # and not on a hidden one
