"""What report.json pins about the judge: its mode, its rubric's text, and the SDK."""

from __future__ import annotations

import hashlib
import importlib.util

import pytest

from flipgate.config.schema import Config, JudgeConfig
from flipgate.judges import describe, prompts
from flipgate.output.report import judge_dict


def config(**judge: object) -> Config:
    return Config(cases="c.jsonl", judge=JudgeConfig(**{"provider": "openai", "model": "m", **judge}))


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_the_native_rubric_of_each_mode_is_pinned_by_its_text() -> None:
    with_query, without = describe(config()), describe(config(mode="without_query"))
    assert (with_query.mode, without.mode) == ("with_query", "without_query")
    assert with_query.rubric_hash["groundedness"] == sha(prompts.GROUNDEDNESS_SYSTEM)
    assert without.rubric_hash["groundedness"] == sha(prompts.GROUNDEDNESS_WITHOUT_QUERY_SYSTEM)
    assert with_query.rubric_version != without.rubric_version
    assert {k: v for k, v in with_query.rubric_hash.items() if k != "groundedness"} == \
        {k: v for k, v in without.rubric_hash.items() if k != "groundedness"}
    assert judge_dict(without)["mode"] == "without_query" and judge_dict(without)["sdk"] is None


def test_without_query_the_judge_never_sees_the_query_and_level_3_means_vague() -> None:
    messages = prompts.groundedness_messages(query="How long do refunds take?", context="30 days.",
                                             response="About a month.", mode="without_query")
    assert "How long do refunds take?" not in messages[1]["content"]
    assert "QUERY" not in messages[1]["content"]
    assert "3 = accurate but vague" in messages[0]["content"]
    assert "3 = nothing to ground" in prompts.groundedness_messages(
        query="q?", context="c", response="r")[0]["content"]


@pytest.mark.skipif(importlib.util.find_spec("azure.ai.evaluation") is None,
                    reason="the optional azure-ai-evaluation package is not installed")
def test_the_azure_engine_pins_the_sdk_and_the_hash_of_the_prompty_it_sends() -> None:
    from flipgate.judges import azure_eval

    info = describe(config(engine="azure-ai-evaluation", mode="without_query"))
    assert info.sdk == azure_eval.sdk_pin() and info.sdk["version"]
    texts = azure_eval.sdk_prompty_texts("without_query")
    assert "Accurate but Vague" in texts["groundedness"]
    assert info.rubric_hash["groundedness"] == sha(texts["groundedness"])
    assert info.rubric_hash["fluency"] == sha(texts["fluency"])
    # Relevance and statements are the native engine's own prompts.
    assert info.rubric_hash["relevance"] == describe(config()).rubric_hash["relevance"]
    assert judge_dict(info)["sdk"] == {"name": "azure-ai-evaluation", "version": info.sdk["version"]}
    assert describe(config(engine="azure-ai-evaluation")).rubric_hash["groundedness"] != \
        info.rubric_hash["groundedness"]


def test_without_the_sdk_a_report_still_names_it_and_pins_no_prompty(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that needs no judge (nothing changed) still writes its report; building the
    engine is what refuses a missing package (tests/integration/test_azure_engine.py)."""
    import importlib.metadata

    from flipgate.judges import azure_eval

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(azure_eval, "_sdk_root", lambda: None)
    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    info = describe(config(engine="azure-ai-evaluation"))
    assert info.sdk == {"name": "azure-ai-evaluation", "version": None}
    assert info.rubric_hash == describe(config()).rubric_hash
