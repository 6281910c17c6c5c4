"""Client CPU per request: the SDK's typed `chat.completions.create` against flipgate's LLM door
(a prepared body through the client's low-level `post`, the reply read as a plain dict).

Not a test. The loopback server runs in a child process, so this process's CPU
time is the client's alone. Both sides send the same N judge-sized requests at
the same concurrency over one client, interleaved in rounds to share the
machine's noise, and the ratio of requests per CPU-second is printed:

    .venv/bin/python benchmarks/bench_client_cpu.py --requests 2000 --concurrency 32
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SERVER = """
import sys, time
sys.path.insert(0, {tests!r})
from support.openai_server import FakeOpenAI
server = FakeOpenAI(); server.start(); print(server.base_url, flush=True)
while True: time.sleep(3600)
"""


def body(i: int) -> dict:
    return {"model": "judge-1", "temperature": 0, "max_tokens": 800,
            "response_format": {"type": "json_object"},
            "messages": [{"role": "system", "content": "Rate fluency from 1 to 5. " * 20},
                         {"role": "user", "content": f"Answer {i}: the card costs 5 dollars. " * 10}]}


async def with_sdk(client, n: int, concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            reply = await client.chat.completions.create(**body(i))
            assert reply.choices[0].message.content

    await asyncio.gather(*(one(i) for i in range(n)))


async def with_flipgate(llm, n: int) -> None:
    async def one(i: int) -> None:
        b = body(i)
        params = {k: v for k, v in b.items() if k not in ("model", "messages")}
        reply = await llm.chat(model=b["model"], messages=b["messages"], params=params)
        assert reply.content

    await asyncio.gather(*(one(i) for i in range(n)))


def cpu(run) -> float:
    started = time.process_time()
    asyncio.run(run())
    return time.process_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    server = subprocess.Popen([sys.executable, "-c", SERVER.format(tests=str(ROOT / "tests"))],
                              stdout=subprocess.PIPE, text=True)
    try:
        base_url = server.stdout.readline().strip()
        os.environ.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="bench")
        from flipgate.llm.client import LLM, Limiter, make_client, openai_endpoint
        from flipgate.settings import Settings

        settings = Settings.from_environ(os.environ)
        endpoint = openai_endpoint(base_url, settings=settings)
        sdk_cpu, door_cpu = [], []
        for _ in range(args.rounds):
            async def sdk() -> None:
                client = make_client(endpoint, settings=settings)
                try:
                    await with_sdk(client, args.requests, args.concurrency)
                finally:
                    await client.close()

            async def door() -> None:
                client = make_client(endpoint, settings=settings)
                try:
                    await with_flipgate(LLM(client, endpoint, limiter=Limiter(limit=args.concurrency)),
                                        args.requests)
                finally:
                    await client.close()

            sdk_cpu.append(cpu(sdk))
            door_cpu.append(cpu(door))
    finally:
        server.kill()
        server.wait()

    per = args.requests
    sdk_ms, door_ms = 1000 * statistics.median(sdk_cpu) / per, 1000 * statistics.median(door_cpu) / per
    print(f"{per} requests x {args.rounds} rounds, concurrency {args.concurrency}, client CPU only")
    print(f"  SDK chat.completions.create   {sdk_ms:.2f} ms CPU/request  ({1000 / sdk_ms:.0f} requests/CPU-s)")
    print(f"  flipgate LLM door (post)      {door_ms:.2f} ms CPU/request  ({1000 / door_ms:.0f} requests/CPU-s)")
    print(f"  requests per CPU-second, door / SDK: {sdk_ms / door_ms:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
