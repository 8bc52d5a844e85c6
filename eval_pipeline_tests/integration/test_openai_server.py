"""The local OpenAI-compatible server's fixed latency: the throughput benchmark's limit
C / (k·L) assumes every answer comes L after its request, however long the model worked."""

from __future__ import annotations

import asyncio
import time

import httpx

from eval_pipeline_tests.model_server import LocalOpenAIServer

LATENCY_S = 0.3
WORK_S = 0.15  # the model's own work per request, done on the server's event loop


def slow_model(body):
    time.sleep(WORK_S)  # blocks the server's loop, as CPU-bound work would
    return None  # no fault: answer normally


async def round_trips(base_url: str, requests: int) -> list[float]:
    body = {"model": "offline", "messages": [{"role": "user", "content": "a hash brown"}]}
    async with httpx.AsyncClient(timeout=10) as client:

        async def one() -> float:
            start = time.perf_counter()
            response = await client.post(f"{base_url}/chat/completions", json=body)
            response.raise_for_status()
            assert response.json()["choices"][0]["message"]["role"] == "assistant"
            return time.perf_counter() - start

        await one()  # open a connection first: the timings below are the server's
        return list(await asyncio.gather(*(one() for _ in range(requests))))


def test_the_model_work_is_inside_the_fixed_latency():
    with LocalOpenAIServer(latency_s=LATENCY_S, fault=slow_model) as server:
        (alone,) = asyncio.run(round_trips(server.base_url, 1))
    # Work done after the wait, as the server did until 2026-11-23, makes this >= L + WORK_S.
    assert LATENCY_S <= alone < LATENCY_S + WORK_S - 0.01


def test_no_answer_comes_before_the_fixed_latency():
    """The limit is an upper bound only if no request is answered early, also when many
    arrive at once (each one's latency starts when the server takes it up)."""
    with LocalOpenAIServer(latency_s=LATENCY_S, fault=slow_model) as server:
        together = asyncio.run(round_trips(server.base_url, 4))
    assert min(together) >= LATENCY_S
