#!/usr/bin/env python3
"""Time the `agentskills-retrieval` package on the same selection task as Skillbase's turn bench.

The fixture comes from the Rust bench (same generated skills, same agents, same 2 KB messages):

    SKILLBASE_BENCH_EXPORT=/tmp/turn-fixture.json \
        cargo bench -p skillbase-runtime --bench turn
    /tmp/retrieval-venv/bin/python tools/bench/retrieval/run.py /tmp/turn-fixture.json

Setup (the package needs Python >= 3.12):

    /root/.pyenv/versions/3.12.1/bin/python3 -m venv /tmp/retrieval-venv
    /tmp/retrieval-venv/bin/pip install agentskills-retrieval

What is timed, per agent ("big": 1,000 skills, "small": 50), with `timeit`:

- ``select``: ``LexicalSelector.select(message, limit=5)`` on an already built index: BM25 over
  name, description and ``when_to_use`` (where each skill's trigger phrases are put), sorted,
  top 5. The coroutine never suspends once the index is built, so it is driven with
  ``coro.send(None)``: no event-loop overhead is counted against the package.
- ``select+catalog``: ``build_selected_catalog(registry, selector, message, limit=K)``, where K
  is the number of entries Skillbase showed in full for that message: rank, then render the XML
  catalog of the winners (the nearest equivalent of Skillbase's whole turn, minus triggers,
  budgets and the report). Run on one event loop with ``run_until_complete``.
- ``index``: the cold path, ``LexicalSelector.index()`` (corpus and BM25 build).

Prints a table of p50/p90 per call in microseconds and the top-5 overlap with Skillbase's BM25.
"""

from __future__ import annotations

import asyncio
import json
import logging
import platform
import statistics
import sys
import timeit
from typing import Any

from agentskills_core import SkillProvider, SkillRegistry
from agentskills_retrieval import LexicalSelector, build_selected_catalog

try:
    from importlib.metadata import version as _version
except ImportError:  # pragma: no cover
    _version = None


class FixtureProvider(SkillProvider):
    """Serves the exported skills from memory (the package's cost, not a disk's)."""

    def __init__(self, skills: dict[str, dict[str, Any]]) -> None:
        self._skills = skills

    async def get_metadata(self, skill_id: str) -> dict[str, Any]:
        s = self._skills[skill_id]
        meta: dict[str, Any] = {"name": s["name"], "description": s["description"]}
        if s["triggers"]:
            meta["when_to_use"] = list(s["triggers"])
        return meta

    async def get_body(self, skill_id: str) -> str:
        return self._skills[skill_id]["body"]

    async def get_script(self, skill_id: str, name: str) -> bytes:
        raise FileNotFoundError(name)

    async def get_asset(self, skill_id: str, name: str) -> bytes:
        raise FileNotFoundError(name)

    async def get_reference(self, skill_id: str, name: str) -> bytes:
        raise FileNotFoundError(name)


def run_sync(coro: Any) -> Any:
    """Drive a coroutine that never suspends."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("coroutine suspended; use an event loop")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[k]


def per_call_us(stmt: Any, repeat: int, number: int) -> list[float]:
    return [t / number * 1e6 for t in timeit.repeat(stmt, repeat=repeat, number=number)]


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/turn-fixture.json"
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    logging.disable(logging.CRITICAL)
    with open(path) as fh:
        fixture = json.load(fh)
    by_name = {s["name"]: s for s in fixture["skills"]}
    pkg = _version("agentskills-retrieval") if _version else "?"
    print(f"python {platform.python_version()}, agentskills-retrieval {pkg}, fixture {path}")
    print(f"{'agent':<6} {'what':<16} {'p50 µs':>10} {'p90 µs':>10} {'calls':>6}")
    loop = asyncio.new_event_loop()
    for label, agent in fixture["agents"].items():
        names = agent["skills"]
        provider = FixtureProvider({n: by_name[n] for n in names})
        registry = SkillRegistry()
        loop.run_until_complete(registry.register([(n, provider) for n in names]))
        selector = LexicalSelector(registry)
        index_us = per_call_us(lambda: loop.run_until_complete(selector.index()), 3, 1)
        messages = agent["messages"]
        select_us: list[float] = []
        catalog_us: list[float] = []
        overlap = []
        for m in messages:
            text = m["text"]
            # Calls take milliseconds: one call per timing, `repeat` timings per message.
            select_us += per_call_us(
                lambda: run_sync(selector.select(text, limit=5)), repeat, 1
            )
            k = max(1, len(m["skillbase"]["catalog_full"]))
            catalog_us += per_call_us(
                lambda: loop.run_until_complete(
                    build_selected_catalog(registry, selector, text, limit=k)
                ),
                max(3, repeat // 3),
                1,
            )
            sel = run_sync(selector.select(text, limit=5))
            theirs = set(sel.skill_ids)
            ours = set(m["skillbase"]["bm25_top10"][:5])
            overlap.append(len(theirs & ours) / 5)
        for what, xs in (("select", select_us), ("select+catalog", catalog_us), ("index (cold)", index_us)):
            print(f"{label:<6} {what:<16} {pct(xs, 50):>10.1f} {pct(xs, 90):>10.1f} {len(xs):>6}")
        print(
            f"{label:<6} skills={len(names)} messages={len(messages)} "
            f"top-5 overlap with Skillbase BM25: {statistics.mean(overlap):.2f}"
        )
    loop.close()


if __name__ == "__main__":
    main()
