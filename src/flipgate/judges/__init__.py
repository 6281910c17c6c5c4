"""Judges: build the ones a run asks for, and describe them for the report.

Importing this package imports no model client: the openai client and the
optional azure-ai-evaluation backend load only inside `make_judge`, so
`flipgate --help` stays light.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flipgate.config.schema import (
    AUTH_ENTRA,
    AZURE_ENGINE,
    GROUNDEDNESS_PRO,
    OPENAI_ENGINE,
    PROVIDER_GITHUB,
    PROVIDERS,
    WITH_QUERY,
    Config,
    JudgeConfig,
    second_judge,
)
from flipgate.errors import InputError

if TYPE_CHECKING:
    from flipgate.judges.base import Judge
    from flipgate.llm.runtime import Runtime
    from flipgate.model import JudgeInfo
    from flipgate.settings import Settings


def _chosen(config: Config, provider: str | None) -> str:
    chosen = provider or config.judge.provider
    if chosen not in PROVIDERS:
        raise InputError(f"--judge must be one of {', '.join(PROVIDERS)}, not {chosen!r}")
    return chosen


def rescore_mode(config: Config, provider: str | None = None) -> str:
    """How this run confirms a flip: same_judge, second_opinion (replace) or both."""
    if second_judge(config.judge, provider) is None:
        return "same_judge"
    assert config.judge.second_opinion is not None
    return "both" if config.judge.second_opinion.mode == "both" else "second_opinion"


def describe(config: Config, provider: str | None = None) -> JudgeInfo:
    """The instrument of a run, as the report pins it, without building a client."""
    from dataclasses import replace

    from flipgate.judges import base, prompts
    from flipgate.model import JudgeInfo

    chosen = _chosen(config, provider)
    second = second_judge(config.judge, chosen)
    rescore = rescore_mode(config, chosen)
    second_model = second.model if second is not None else None
    mode = config.judge.mode
    if chosen == "offline":
        from flipgate.judges.offline import OfflineJudge

        return replace(OfflineJudge.info, rescore=rescore, second_opinion=second_model, mode=mode)
    judge = config.judge
    texts = prompts.rubric_texts(questions=config.relevance.questions, mode=judge.mode)
    sdk = None
    if judge.engine == AZURE_ENGINE:
        from flipgate.judges import azure_eval

        # The SDK's own prompty files score groundedness and fluency: pin their text.
        texts.update(azure_eval.sdk_prompty_texts(judge.mode))
        sdk = azure_eval.sdk_pin()
    hashes = prompts.rubric_hashes(texts)
    return JudgeInfo(provider=chosen, model=judge.model, engine=judge.engine, mode=mode, sdk=sdk,
                     embedding_model=config.relevance.embedding_model,
                     rubric_version=prompts.pinned_version(base.RUBRIC_VERSION, hashes),
                     rubric_hash=hashes, temperature=None if judge.reasoning else 0,
                     seed=judge.seed, auth=judge.auth, rescore=rescore, second_opinion=second_model)


def make_judge(config: Config, *, runtime: Runtime, settings: Settings,
               provider: str | None = None) -> Judge:
    """The judge for this run: `provider` (from `--judge`) wins over `judge.provider`."""
    chosen = _chosen(config, provider)
    if chosen == "offline":
        from flipgate.judges.offline import OfflineJudge

        return OfflineJudge(config)
    if config.judge.model == JudgeConfig.model:
        # The offline placeholder model: an LLM judge must be pinned explicitly.
        raise InputError(f"{config.source}: the {chosen} judge needs 'judge.model' "
                         "(pin the judge model)")
    return _llm_judge(config, config.judge, provider=chosen, runtime=runtime, settings=settings,
                      info=describe(config, chosen), purpose="judge")


def make_second_judge(config: Config, *, runtime: Runtime, settings: Settings,
                      provider: str | None = None) -> Judge | None:
    """The second-opinion judge (`judge.second_opinion`, from the trusted base config), or None."""
    second = second_judge(config.judge, _chosen(config, provider))
    if second is None:
        return None
    if second.provider == "offline":
        from flipgate.judges.offline import OfflineJudge

        return OfflineJudge(config)
    if second.engine == GROUNDEDNESS_PRO:
        return _groundedness_pro(config, second, runtime=runtime, settings=settings,
                                 provider=_chosen(config, provider))
    from dataclasses import replace

    info = replace(describe(replace(config, judge=replace(config.judge, engine=OPENAI_ENGINE)),
                            second.provider), model=second.model, engine=OPENAI_ENGINE,
                   temperature=None if second.reasoning else 0, rescore="second_opinion",
                   second_opinion=None)
    return _llm_judge(config, replace(second, engine=OPENAI_ENGINE), provider=second.provider,
                      runtime=runtime, settings=settings, info=info, purpose="second_opinion")


def _llm_judge(config: Config, judge: JudgeConfig, *, provider: str, runtime: Runtime,
               settings: Settings, info: JudgeInfo, purpose: str) -> Judge:
    from flipgate.judges.openai_judge import OpenAIJudge
    from flipgate.llm.client import RetryPolicy
    from flipgate.llm.endpoints import LazyClient, azure_endpoint, github_endpoint, openai_endpoint

    if judge.engine == AZURE_ENGINE and provider == PROVIDER_GITHUB:
        raise InputError(f"{config.source}: judge.engine {AZURE_ENGINE} calls OpenAI or Azure; "
                         "--judge github is GitHub Models")
    if judge.auth == AUTH_ENTRA and provider != "azure":
        raise InputError(f"{config.source}: judge.auth entra signs in to Azure; "
                         f"--judge {provider} has no Azure endpoint")
    endpoint = (openai_endpoint(judge.base_url, settings=settings) if provider == "openai"
                else github_endpoint(judge.base_url) if provider == PROVIDER_GITHUB
                else azure_endpoint(judge.azure_endpoint, judge.api_version, deployment=judge.model,
                                    settings=settings, auth=judge.auth))
    sign_in = runtime.sign_in(settings) if endpoint.auth == AUTH_ENTRA else None
    client = LazyClient(endpoint, settings=settings, timeout=judge.timeout,
                        max_retries=judge.max_retries, sign_in=sign_in)
    llm = runtime.llm(client, endpoint, purpose=purpose,
                      retry=RetryPolicy(max_retries=judge.max_retries, max_wait=judge.max_wait,
                                        deadline=judge.timeout),
                      embedding_batch=config.relevance.embedding_batch)
    llm_judge = OpenAIJudge(llm, info=info, reasoning=judge.reasoning,
                            questions=config.relevance.questions, seed=judge.seed)
    if judge.engine != AZURE_ENGINE:
        return llm_judge

    from flipgate.judges.azure_eval import AzureEvalJudge, model_config_for

    return AzureEvalJudge(model_config=model_config_for(endpoint, model=judge.model, settings=settings),
                          credential=sign_in.credential() if sign_in is not None else None,
                          info=info, relevance_judge=llm_judge, limiter=runtime.limiter,
                          budget=runtime.budget, timeout=judge.timeout * (judge.max_retries + 1),
                          reasoning=judge.reasoning, usage=llm.usage)


def _groundedness_pro(config: Config, second: JudgeConfig, *, runtime: Runtime,
                      settings: Settings, provider: str) -> Judge:
    """The Azure AI evaluation service's verdict (GroundednessProEvaluator), signed in through
    Entra ID; the project endpoint comes from the base's configuration only."""
    from dataclasses import replace

    from flipgate.judges.groundedness_pro import GroundednessProJudge

    opinion = config.judge.second_opinion
    assert opinion is not None and opinion.azure_ai_project is not None  # the schema's rule
    if provider != "azure":
        raise InputError(f"{config.source}: judge.second_opinion.engine {GROUNDEDNESS_PRO} is an "
                         f"Azure AI service; --judge {provider} is not azure")
    info = replace(describe(config, provider), model=GROUNDEDNESS_PRO, engine=GROUNDEDNESS_PRO,
                   embedding_model=None, rubric_version=None, rubric_hash={}, temperature=None,
                   seed=None, auth=AUTH_ENTRA, rescore="second_opinion", second_opinion=None)
    return GroundednessProJudge(project=opinion.azure_ai_project,
                                sign_in=runtime.sign_in(settings), info=info,
                                limiter=runtime.limiter, budget=runtime.budget,
                                timeout=second.timeout * (second.max_retries + 1),
                                usage=runtime.usage_for("second_opinion"),
                                with_query=config.judge.mode == WITH_QUERY)


@dataclass
class Judges:
    """The run's judge and, when `judge.second_opinion` is set, the judge that confirms flips."""

    first: Judge
    second: Judge | None
    mode: str  # same_judge | second_opinion | both

    @property
    def info(self) -> JudgeInfo:
        """The instrument as the report pins it, with what the provider returned."""
        from dataclasses import replace

        return replace(self.first.info, rescore=self.mode,
                       second_opinion=self.second.info.model if self.second is not None else None)

    async def probe(self) -> None:
        """One cheap request to each judge's model (and the embeddings model): a wrong
        key, endpoint or model stops the run before anything else is paid for. The probes
        go out at once; the first judge's failure is the one reported when both fail."""
        if self.second is None:
            await self.first.probe()
            return
        outcomes = await asyncio.gather(self.first.probe(), self.second.probe(),
                                        return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def aclose(self) -> None:
        try:
            await self.first.aclose()
        finally:
            if self.second is not None:
                await self.second.aclose()


def make_judges(config: Config, *, runtime: Runtime, settings: Settings,
                provider: str | None = None) -> Judges:
    """Both judges of a run, built before anything is paid for."""
    first = make_judge(config, runtime=runtime, settings=settings, provider=provider)
    second = make_second_judge(config, runtime=runtime, settings=settings, provider=provider)
    return Judges(first=first, second=second, mode=rescore_mode(config, provider))
