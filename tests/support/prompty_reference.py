"""Drive the reference Prompty runtime (run with a reference venv's python, not ours).

    python prompty_reference.py FILE INPUTS_JSON

Prints one JSON object: the chat-completion request the reference would
send for FILE rendered with INPUTS (`{"messages", "model", "parameters"}`),
or `{"error": "..."}` when the reference cannot render it. Works with the
0.1.x line (v1 files) and 2.x (v2 files), whichever is installed.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _v1(path: str, inputs: dict[str, Any]) -> dict[str, Any]:
    import prompty

    loaded = prompty.load(path)
    messages = prompty.prepare(loaded, inputs)
    configuration = loaded.model.configuration or {}
    model = configuration.get("azure_deployment") or configuration.get("model")
    return {"messages": messages, "model": model, "parameters": dict(loaded.model.parameters or {})}


def _v2(path: str, inputs: dict[str, Any]) -> dict[str, Any]:
    import prompty
    from prompty.providers.openai.executor import OpenAIExecutor

    agent = prompty.load(path)
    messages = prompty.prepare(agent, inputs)
    if agent.model is None:
        # No `model:` section: the runtime renders the file, but its executor reads options
        # from a model object; an empty one (what `model: ""` loads as) adds none.
        from prompty.model import Model

        agent.model = Model()
    args = OpenAIExecutor()._build_chat_args(agent, messages)  # the request it would send
    model = agent.model.id if agent.model is not None else None
    args.pop("model")
    wire = args.pop("messages")
    return {"messages": wire, "model": model or None, "parameters": args}


def main() -> None:
    path, inputs = sys.argv[1], json.loads(sys.argv[2])
    from importlib.metadata import version

    major = int(version("prompty").split(".")[0])
    try:
        result = (_v2 if major >= 2 else _v1)(path, inputs)
    except Exception as exc:  # noqa: BLE001 - any failure is "the reference cannot render it"
        result = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(result, default=str, sort_keys=True))


if __name__ == "__main__":
    main()
