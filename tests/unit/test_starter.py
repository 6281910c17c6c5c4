"""What `flipgate init` writes, as text: the first case, the configuration, the workflow."""

from __future__ import annotations

import yaml

from flipgate.config.schema import parse_config
from flipgate.config.starter import Starter, config_text, example_case, workflow_text


def test_the_case_takes_the_question_and_context_under_their_usual_names() -> None:
    case = example_case({"question": "Q?", "documents": ["one.", "two."], "tone": "warm"})
    assert case == {"id": "example-001", "category": "general", "query": "Q?", "context": "one.\n\ntwo.",
                    "question": "Q?", "documents": ["one.", "two."], "tone": "warm"}


def test_a_sample_cannot_replace_the_case_s_id_or_category() -> None:
    case = example_case({"query": "Q?", "context": "C.", "id": 7, "category": None})
    assert (case["id"], case["category"]) == ("example-001", "general")


def test_without_a_sample_the_case_says_what_to_fill_in() -> None:
    case = example_case({})
    assert set(case) == {"id", "category", "query", "context"}
    assert "retrieval" in case["context"]


def test_the_configuration_is_valid_and_names_paths_from_its_own_directory() -> None:
    starter = Starter(generator="app/chat.prompty", config="eval/.flipgate.yml", cases="eval/cases.jsonl")
    config = parse_config(config_text(starter), directory="eval")
    assert yaml.safe_load(config_text(starter))["generator"] == "../app/chat.prompty"
    assert config.gate.blocking_categories == ("general",)
    assert config.judge.provider == "openai" and config.judge.model == "gpt-4.1-mini"


def test_the_configuration_writes_the_sample_size_choice_with_why() -> None:
    text = config_text(Starter(generator="chat.prompty"))
    config = parse_config(text, directory=".")
    assert (config.gate.min_cases_per_category, config.gate.strict) == (50, False)
    lines = text.splitlines()
    at = lines.index("  min_cases_per_category: 50")
    assert lines[at + 1] == "  strict: false"
    why = lines[at - 1]
    assert why.startswith("  # Why:") and "held back" in why and "strict: true" in why


def test_the_workflow_names_a_non_default_config_and_the_azure_key() -> None:
    starter = Starter(generator="p.prompty", generator_type="azure_openai", config="svc/.flipgate.yml")
    step = yaml.safe_load(workflow_text(starter))["jobs"]["flipgate"]["steps"][2]
    assert step["with"] == {"azure-openai-api-key": "${{ secrets.AZURE_OPENAI_API_KEY }}",
                            "config": "svc/.flipgate.yml"}
