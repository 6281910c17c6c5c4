"""Judges: build the one a run asks for.

Importing this package imports no model client: the openai client and the
optional azure-ai-evaluation backend load only inside `make_judge`, so
`flipgate --help` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flipgate.config import AZURE_ENGINE, PROVIDERS, Config, JudgeConfig
from flipgate.errors import InputError

if TYPE_CHECKING:
    from flipgate.judges.base import Judge
    from flipgate.runtime import Runtime
    from flipgate.settings import Settings


def make_judge(config: Config, *, runtime: Runtime, settings: Settings,
               provider: str | None = None) -> Judge:
    """The judge for this run: `provider` (from `--judge`) wins over `judge.provider`."""
    chosen = provider or config.judge.provider
    if chosen not in PROVIDERS:
        raise InputError(f"--judge must be one of {', '.join(PROVIDERS)}, not {chosen!r}")
    if chosen == "offline":
        from flipgate.judges.offline import OfflineJudge

        return OfflineJudge(config)
    if config.judge.model == JudgeConfig.model:
        # The offline placeholder model: an LLM judge must be pinned explicitly.
        raise InputError(f"{config.source}: the {chosen} judge needs 'judge.model' "
                         "(pin the judge model)")

    from flipgate.judges.openai_judge import OpenAIJudge
    from flipgate.llm import LLM, azure_endpoint, make_client, openai_endpoint
    from flipgate.model import JudgeInfo

    judge = config.judge
    endpoint = (openai_endpoint(judge.base_url, settings=settings) if chosen == "openai"
                else azure_endpoint(judge.azure_endpoint, judge.api_version, deployment=judge.model,
                                    settings=settings))
    client = make_client(endpoint, settings=settings, timeout=judge.timeout,
                         max_retries=judge.max_retries)
    llm = LLM(client, endpoint, limiter=runtime.limiter, cache=runtime.cache,
              budget=runtime.budget, usage=runtime.usage_for("judge"),
              embedding_batch=config.relevance.embedding_batch)
    info = JudgeInfo(provider=chosen, model=judge.model, engine=judge.engine,
                     embedding_model=config.relevance.embedding_model)
    llm_judge = OpenAIJudge(llm, info=info, reasoning=judge.reasoning,
                            questions=config.relevance.questions)
    if judge.engine != AZURE_ENGINE:
        return llm_judge

    from flipgate.judges.azure_eval import AzureEvalJudge, model_config_for

    return AzureEvalJudge(model_config=model_config_for(endpoint, model=judge.model, settings=settings),
                          info=info, relevance_judge=llm_judge, limiter=runtime.limiter,
                          budget=runtime.budget, timeout=judge.timeout * (judge.max_retries + 1),
                          reasoning=judge.reasoning, usage=llm.usage)
