"""Client CPU per request: flipgate's LLM door on each HTTP transport the openai SDK
supports, against a bare AsyncOpenAI client sending the same bodies in the same run.

Not a test. The loopback server runs in a child process, so this process's CPU time
is the client's alone. Every variant sends the same N judge-sized requests at the same
concurrency over one client of its own; the variants take turns in each round (the
order rotates), so a loaded machine's noise falls on all of them, and each is printed
as its median CPU a request and as a ratio to the bare client of the same rounds:

    .venv/bin/python benchmarks/bench_client_cpu.py --requests 2000 --concurrency 64
    .venv/bin/python benchmarks/bench_client_cpu.py --close   # a server that closes each connection

The server keeps connections open (HTTP/1.1, as providers do) unless `--close` asks for
one that closes each after its response, so every request pays a TCP set-up.

Each measurement runs in a child process of its own (a warm-up of 50 requests, then the N
timed), so no variant inherits another's heap or connection pool. `--previous SRC` adds
`door-previous`: the door of another checkout's `src/` (the last release), on its own
default transport, in the same rounds:

    git worktree add /tmp/previous v0.1.0
    .venv/bin/python benchmarks/bench_client_cpu.py --previous /tmp/previous/src

Variants:
- `bare`: `openai.AsyncOpenAI()` as shipped, `chat.completions.create` under a semaphore.
- `bare-post`: the same client, each body through its low-level `post`, the reply read
  undecoded as the HTTP library's response and parsed with `json.loads`.
- `bare-post-aiohttp`: `bare-post` on the SDK's aiohttp client, the body sent as prepared
  JSON bytes (`content=`): the least the SDK's own request path costs on that transport.
- `door-httpx`: the door on the SDK's httpx client (the fallback without aiohttp).
- `door-httpx-pool`: the same with a pool sized to the concurrency (keep-alive = limit).
- `door-aiohttp`: the door on the SDK's aiohttp client (`DefaultAioHttpClient`).
HTTP/2 (`h2`) is not measured: the loopback server speaks HTTP/1.1 only, and httpx
negotiates HTTP/2 through TLS (ALPN), so a plain-HTTP run would measure HTTP/1.1 again.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SERVER = """
import sys, time
sys.path.insert(0, {tests!r})
from support.openai_server import FakeOpenAI
server = FakeOpenAI(keep_alive={keep_alive!r}); server.start(); print(server.base_url, flush=True)
while True: time.sleep(3600)
"""

VARIANTS = ("bare", "bare-post", "bare-post-aiohttp", "door-httpx", "door-httpx-pool", "door-aiohttp")
CHOICES = (*VARIANTS, "door-previous")


def body(i: int) -> dict[str, Any]:
    return {"model": "judge-1", "temperature": 0, "max_tokens": 800,
            "response_format": {"type": "json_object"},
            "messages": [{"role": "system", "content": "Rate fluency from 1 to 5. " * 20},
                         {"role": "user", "content": f"Answer {i}: the card costs 5 dollars. " * 10}]}


async def bare(base_url: str, n: int, concurrency: int) -> None:
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench")
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            reply = await client.chat.completions.create(**body(i))
            assert reply.choices[0].message.content

    try:
        await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await client.close()


async def bare_post(base_url: str, n: int, concurrency: int, *, aiohttp: bool = False) -> None:
    import json

    import openai

    from flipgate.llm.transport import http_library

    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench",
                                **({"http_client": openai.DefaultAioHttpClient()} if aiohttp else {}))
    response_type = http_library(openai).Response
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            if aiohttp:
                reply = await client.post("/chat/completions", content=json.dumps(body(i)).encode(),
                                          cast_to=response_type)
            else:
                reply = await client.post("/chat/completions", body=body(i), cast_to=response_type)
            assert json.loads(reply.content)["choices"][0]["message"]["content"]

    try:
        await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await client.close()


def door(backend: str, *, pool: bool) -> Callable[[str, int, int], Awaitable[None]]:
    async def run(base_url: str, n: int, concurrency: int) -> None:
        import openai

        from flipgate.llm.client import LLM, Limiter
        from flipgate.llm.endpoints import openai_endpoint
        from flipgate.llm.transport import capped_http_client
        from flipgate.llm.workpool import map_bounded, pool_size
        from flipgate.settings import Settings

        endpoint = openai_endpoint(base_url, settings=Settings.from_environ(os.environ))
        limits = _limits(concurrency) if pool else None
        client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", http_client=capped_http_client(
            openai, backend=backend, limits=limits))
        llm = LLM(client, endpoint, limiter=Limiter(limit=concurrency))

        async def one(i: int) -> None:
            b = body(i)
            params = {k: v for k, v in b.items() if k not in ("model", "messages")}
            reply = await llm.chat(model=b["model"], messages=b["messages"], params=params)
            assert reply.content

        try:  # as a run sends: a bounded pool of workers, not a task per request
            await map_bounded(one, range(n), workers=pool_size(concurrency))
        finally:
            await client.close()

    return run


def _limits(concurrency: int) -> Any:
    import httpx2

    return httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)


RUNS: dict[str, Callable[[str, int, int], Awaitable[None]]] = {
    "bare": bare,
    "bare-post": bare_post,
    "bare-post-aiohttp": lambda base_url, n, concurrency: bare_post(base_url, n, concurrency, aiohttp=True),
    "door-httpx": door("httpx", pool=False),
    "door-httpx-pool": door("httpx", pool=True),
    "door-aiohttp": door("aiohttp", pool=False),
    "door-previous": door("aiohttp", pool=False),  # run with another checkout's src/ first on the path
}
WARM_UP = 50


def child(variant: str, base_url: str, n: int, concurrency: int) -> float:
    """One measurement, in this (child) process: imports and a warm-up, then N requests."""
    os.environ.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="bench")
    asyncio.run(RUNS[variant](base_url, WARM_UP, concurrency))  # type: ignore[arg-type]
    started = time.process_time()
    asyncio.run(RUNS[variant](base_url, n, concurrency))  # type: ignore[arg-type]
    return time.process_time() - started


def measure(variant: str, base_url: str, args: argparse.Namespace) -> float:
    env = dict(os.environ)
    if variant == "door-previous":
        env["PYTHONPATH"] = args.previous
    done = subprocess.run([sys.executable, __file__, "--child", variant, "--base-url", base_url,
                           "--requests", str(args.requests), "--concurrency", str(args.concurrency)],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{done.stderr}")
    return float(done.stdout.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--close", action="store_true",
                        help="the server closes each connection after its response")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=CHOICES)
    parser.add_argument("--previous", metavar="SRC",
                        help="another checkout's src/ directory: adds the door-previous variant")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(child(args.child, args.base_url, args.requests, args.concurrency))
        return 0
    if args.previous and "door-previous" not in args.variants:
        args.variants.append("door-previous")
    elif not args.previous and "door-previous" in args.variants:
        parser.error("door-previous needs --previous SRC")

    server = subprocess.Popen([sys.executable, "-c", SERVER.format(tests=str(ROOT / "tests"),
                                                                   keep_alive=not args.close)],
                              stdout=subprocess.PIPE, text=True)
    seconds: dict[str, list[float]] = {name: [] for name in args.variants}
    ratios: dict[str, list[float]] = {name: [] for name in args.variants}
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        for round_ in range(args.rounds):
            order = args.variants[round_ % len(args.variants):] + args.variants[:round_ % len(args.variants)]
            spent = {name: measure(name, base_url, args) for name in order}
            for name in args.variants:
                seconds[name].append(spent[name])
                if "bare" in spent:
                    ratios[name].append(spent[name] / spent["bare"])
    finally:
        server.kill()
        server.wait()

    print(f"{args.requests} requests x {args.rounds} rounds, concurrency {args.concurrency}, "
          f"server {'closes each connection' if args.close else 'keeps connections'}, "
          "client CPU only")
    for name in args.variants:
        ms = 1000 * statistics.median(seconds[name]) / args.requests
        ratio = (f"{statistics.median(ratios[name]):.2f}x bare "
                 f"({min(ratios[name]):.2f}-{max(ratios[name]):.2f})") if ratios[name] else ""
        print(f"  {name:<18} {ms:5.2f} ms CPU/request  {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
