"""`flipgate replay --sample`: what a generator would send for its own sample, sending nothing.

The one ref is trusted (as in single-ref `replay`): `${env:...}` expands and
`${file:...}` loads from the same ref. The sample is v1's `sample:` (inline
or `${file:sample.json}`) or v2's input examples; declared v2 defaults fill
the gaps, as the reference runtime fills them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from flipgate.config.schema import EndpointConfig
from flipgate.generator.endpoint_lock import trusted_request
from flipgate.prompts import has_sample, sample_isolated

if TYPE_CHECKING:
    from flipgate.run.refs import Ref, Repo


def sample_request(*, repo: Repo, ref: Ref, path: str, environ: Mapping[str, str],
                   endpoint: EndpointConfig | None = None, strict_undefined: bool = False,
                   warn: Callable[[str], None] = lambda text: None) -> dict[str, Any]:
    """`{"messages", "model", "parameters"}` for the generator at `path` of `ref`; `warn` hears
    when the file has no sample, so its inputs rendered empty."""
    data = repo.read_required(ref, path)
    prompt, rendered = sample_isolated(data, path=path, source=f"{path}@{ref.label}", repo=repo.path,
                                        sha=ref.sha, environ=environ, strict_undefined=strict_undefined)
    if not has_sample(prompt):
        warn(f"{path} has no sample: (nor input examples or defaults), so its inputs rendered "
             "empty; add a sample: to see a real request")
    model, parameters = trusted_request(prompt, environ=environ, endpoint=endpoint,
                                        read=repo.reader(ref))
    return {"messages": [dict(m) for m in rendered.messages["sample"]], "model": model,
            "parameters": parameters}
