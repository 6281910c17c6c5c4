"""Every prompt of tests/fixtures/rag-prompts (corpus.json) rendered by its own library and
by flipgate, for the same values; prints how many are the same, refused, or different.

Run once, by hand, in a throw-away venv with the libraries (never the project's):

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install langchain-core llama-index-core pyyaml pystache
    /tmp/refvenv/bin/python scripts/rag_prompt_reference.py [--write]

`--write` stores each library's messages (and each refusal flipgate gives) in
tests/fixtures/rag-prompts/expected.json, which tests/integration/test_rag_prompt_corpus.py
compares flipgate with on every run. Without the libraries it says so and exits 0.

The fixtures are this repository's own copies of public files, so the library side executes
them (each module alone; an import of a package that is not installed gets an inert stand-in).
"""

from __future__ import annotations

import importlib
import json
import sys
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "rag-prompts"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

try:
    import langchain_core.prompts  # noqa: F401
    import llama_index.core.prompts  # noqa: F401
except ImportError:
    print("langchain-core and llama-index-core are not installed here: nothing compared "
          "(see this script's docstring)")
    sys.exit(0)

from jinja2.sandbox import SandboxedEnvironment  # noqa: E402

from flipgate.errors import InputError  # noqa: E402

from support.rag_corpus import flipgate_messages  # noqa: E402


class _Stand(types.ModuleType):
    """A package that is not installed: every name it exports is an inert callable."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None


def _import(name: str) -> None:
    try:
        importlib.import_module(name)
    except ImportError:
        sys.modules[name] = _Stand(name)


def _module(path: Path) -> dict[str, Any]:
    """The fixture executed alone; `langchain.prompts` is langchain-core's, as it re-exports."""
    sys.modules.setdefault("langchain", _Stand("langchain"))
    sys.modules["langchain.prompts"] = sys.modules["langchain_core.prompts"]
    for line in path.read_text().splitlines():
        words = line.split()
        if len(words) > 1 and words[0] in ("from", "import") and not line.startswith(" "):
            _import(words[1].rstrip(","))
    namespace: dict[str, Any] = {"__name__": "fixture"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - our own fixture
    return namespace


def _as_dicts(messages: list[Any]) -> list[dict[str, Any]]:
    roles = {"system": "system", "human": "user", "ai": "assistant", "user": "user",
             "assistant": "assistant"}
    out = []
    for message in messages:
        role = getattr(message, "type", None) or getattr(message.role, "value", message.role)
        out.append({"role": roles[role], "content": message.content})
    return out


def library_messages(entry: dict[str, Any], values: dict[str, Any]) -> list[dict[str, Any]]:
    path = CORPUS / entry["file"]
    if "python" in entry:
        target = _module(path)[entry["python"]]
        if hasattr(target, "invoke"):           # LangChain
            return _as_dicts(target.invoke(values).to_messages())
        return _as_dicts(target.format_messages(**values))   # LlamaIndex
    if entry["id"].startswith("microsoft+graphrag:"):
        system = _module(path)[entry["messages"][0]["python"].rpartition(":")[2]]
        return [{"role": "system", "content": system.format(**values)},
                {"role": "user", "content": values["query"]}]
    env = SandboxedEnvironment(autoescape=False, trim_blocks=True, lstrip_blocks=True)
    system = env.from_string(path.read_text(encoding="utf-8").strip()).render(**values)
    return [{"role": "system", "content": system}, {"role": "user", "content": "Output: "}]


def main() -> int:
    entries = json.loads((CORPUS / "corpus.json").read_text())["entries"]
    expected: dict[str, Any] = {}
    same = refused = differ = 0
    for entry in entries:
        try:
            ours, values = flipgate_messages(entry)
        except InputError as exc:
            refused += 1
            expected[entry["id"]] = {"refused": str(exc)}
            print(f"refused  {entry['id']}: {exc}")
            continue
        theirs = library_messages(entry, values)
        expected[entry["id"]] = {"messages": theirs}
        if theirs == ours:
            same += 1
        else:
            differ += 1
            print(f"DIFFERS  {entry['id']}:\n  library:  {theirs!r}\n  flipgate: {ours!r}")
    print(f"{len(entries)} prompts: {same} same, {refused} refused in one line, {differ} differ")
    if "--write" in sys.argv:
        (CORPUS / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
