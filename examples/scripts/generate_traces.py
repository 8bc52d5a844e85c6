"""Generate the shipped local production traces: datasets/drive_thru/traces/<day>.jsonl.

    .venv/bin/python examples/scripts/generate_traces.py [--days 2026-11-19 2026-11-20 2026-11-21]

Runs the real drive-thru agent (offline model, LangGraph) on realistic customer
utterances and writes one root observation per line, in the shape of Langfuse's v2
observations API, as production tracing would record it: name ``drive-thru-agent``, input
``{customer_utterance}``, output the agent's output contract. Traffic is 90% on the
production prompt and 10% on staging, at temperature 0.7 (seeded mistakes), so some
traces are wrong. Half of the wrong orders carry user feedback with the crew's correction
(``metadata.user_feedback.corrected_items``), simulated by the production prompt at
temperature 0, which gets the whole golden dataset right. Timestamps, latencies and costs
come from a seeded generator (the offline model's own latency is not realistic), so
re-running gives identical files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval_examples.drive_thru.evaluators import order_lines  # noqa: E402
from eval_examples.drive_thru.suite import TRACE_NAME  # noqa: E402

from eval_pipeline.agents.project import load_project  # noqa: E402
from eval_pipeline.core.running.pricing import PriceTable  # noqa: E402
from eval_pipeline.core.running.runner import RunnerConfig, run_agent_sync  # noqa: E402
from eval_pipeline.core.store.records import ItemOutput  # noqa: E402
from eval_pipeline.core.suites.cases import GoldenCase  # noqa: E402
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry  # noqa: E402
from eval_pipeline.llm.model_settings import LLMSettings  # noqa: E402

PROMPT = "drive-thru/orchestrator"
PRICED_AS = "gpt-4o-mini"  # cost is estimated as if the production model were this one
TRACES_PER_DAY = 120

# (category, utterance): what customers actually say at a drive-thru speaker.
UTTERANCES = [
    ("simple", "Can I get an Egg McMuffin"),
    ("simple", "one hash brown please"),
    ("simple", "I'll do the Big Breakfast"),
    ("simple", "Just a Sausage Burrito"),
    ("simple", "hotcakes please"),
    ("simple", "can I have a sausage mcgriddles"),
    ("simple", "a fruit and maple oatmeal"),
    ("simple", "Hotcakes and Sausage, thanks"),
    ("quantity", "two hash browns"),
    ("quantity", "Can I get three Sausage Burritos"),
    ("quantity", "four Egg McMuffins for the office"),
    ("quantity", "a couple of hash browns"),
    ("quantity", "Give me 2 Sausage Biscuits"),
    ("quantity", "five orange juices"),
    ("multi_item", "An Egg McMuffin and a hash brown"),
    ("multi_item", "Big Breakfast and a large coffee"),
    ("multi_item", "two sausage burritos and a small orange juice"),
    ("multi_item", "Hotcakes, a hash brown and a medium hot chocolate"),
    ("multi_item", "a sausage mcmuffin and an iced coffee"),
    ("multi_item", "one oatmeal and one premium roast coffee"),
    ("modifiers", "Egg McMuffin with no cheese"),
    ("modifiers", "Sausage McMuffin, add egg"),
    ("modifiers", "large coffee with cream and sugar"),
    ("modifiers", "hotcakes with extra syrup"),
    ("modifiers", "an iced coffee with no ice"),
    ("modifiers", "sausage biscuit with egg and extra cheese"),
    ("modifiers", "Egg McMuffin, add bacon"),
    ("modifiers", "medium iced coffee with cream"),
    ("not_on_menu", "Can I get a Big Mac"),
    ("not_on_menu", "do you have chicken nuggets"),
    ("not_on_menu", "a large fries please"),
    ("not_on_menu", "I want a McFlurry"),
    ("not_on_menu", "one cheeseburger"),
    ("not_on_menu", "can I get a smoothie"),
    ("greeting", "hi there"),
    ("greeting", "good morning!"),
    ("greeting", "hello, how are you today"),
    ("greeting", "what's good here?"),
    ("greeting", "are you guys open?"),
    ("informal", "lemme get uhh an egg mcmuffin"),
    ("informal", "yo can i get like two hash browns"),
    ("informal", "gimme a big breakfast real quick"),
    ("informal", "uh yeah one sausage burrito thanks"),
    ("informal", "I'm gonna go with the hotcakes"),
    ("informal", "just a coffee, black, large"),
    ("ambiguous", "can I get a McMuffin"),
    ("ambiguous", "one biscuit please"),
    ("ambiguous", "a McGriddles"),
    ("ambiguous", "I'll take a coffee"),
    ("ambiguous", "some hotcakes thing"),
    ("complex_combo", "two Egg McMuffins with no cheese and a large coffee with cream"),
    ("complex_combo", "Big Breakfast, two hash browns and a medium orange juice"),
    ("complex_combo", "a sausage mcmuffin with egg, a hash brown and a small iced coffee"),
    ("complex_combo", "three sausage burritos, one with extra cheese, and two coffees"),
    ("complex_combo", "hotcakes with extra syrup, a hash brown, and a large hot chocolate"),
    ("complex_combo", "an oatmeal with cream and sugar and a medium premium roast coffee"),
    ("quantity", "6 hash browns for the crew"),
    ("multi_item", "sausage burrito and hash brown"),
    ("modifiers", "bacon egg and cheese biscuit no butter"),
    ("informal", "can i get one of them sausage mcgriddles"),
    ("not_on_menu", "a vanilla latte please"),
    ("ambiguous", "the breakfast one"),
]


def trace_id(day: date, n: int) -> str:
    return hashlib.sha256(f"drive-thru-prod:{day}:{n}".encode()).hexdigest()[:32]


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def generate_day(day: date, registry: LocalPromptRegistry) -> list[dict]:
    rng = random.Random(f"traces:{day}")
    labels = registry.labels(PROMPT)
    prompts = {label: registry.get(PROMPT, labels[label]) for label in ("production", "staging")}
    picks = []
    for n in range(TRACES_PER_DAY):
        category, utterance = UTTERANCES[rng.randrange(len(UTTERANCES))]
        label = "staging" if rng.random() < 0.1 else "production"
        picks.append((n, category, utterance, label))
    settings = LLMSettings.create(model="offline", temperature=0.7, seed=hash_seed(day))
    correct = LLMSettings.create(model="offline", temperature=0.0)
    all_cases = {n: case(day, n, c, u) for n, c, u, _ in picks}
    make_agent = load_project(ROOT / "eval-pipeline.yaml").suite("drive_thru").make_agent
    reference = run(make_agent(prompts["production"], correct), list(all_cases.values()))
    observations: dict[int, dict] = {}
    prices = PriceTable.from_file(None)
    for label, prompt in prompts.items():
        chosen = [p for p in picks if p[3] == label]
        outputs = run(make_agent(prompt, settings), [all_cases[p[0]] for p in chosen],
                      seed=settings.seed)  # fmt: skip
        for n, category, utterance, _ in chosen:
            out = outputs[all_cases[n].id]
            truth = expected_items(reference[all_cases[n].id].output)
            observations[n] = observation(
                day, n, rng, category, utterance, prompt, out, prices, truth
            )
    return [observations[n] for n in sorted(observations)]


def case(day: date, n: int, category: str, utterance: str) -> GoldenCase:
    return GoldenCase(
        id=f"{day}-{n}",
        input={"customer_utterance": utterance},
        expected_output=None,
        metadata={"category": category, "difficulty": "medium", "tier": "full"},
    )


def run(agent, cases: list[GoldenCase], seed: int = 0) -> dict[str, ItemOutput]:
    """The agent's output per case id (one repeat); item seeds derive from ``seed``."""
    config = RunnerConfig(concurrency=4, base_seed=seed)
    return {o.item_id: o for o in run_agent_sync(agent, cases, config)}


def expected_items(output: dict | None) -> list[dict]:
    """An output's order in the golden-case format (what a correction at the window gives)."""
    return [
        {"item_id": line["item_id"], "name": line["name"], "quantity": line["quantity"],
         "size": line.get("size") or "regular",
         "modifiers": [{"modifier_id": m["modifier_id"], "name": m["name"]}
                       for m in line.get("modifiers") or []]}
        for line in order_lines(output)
    ]  # fmt: skip


def hash_seed(day: date) -> int:
    return int(hashlib.sha256(str(day).encode()).hexdigest()[:8], 16)


def observation(day, n, rng, category, utterance, prompt, out, prices, truth) -> dict:
    start = datetime(day.year, day.month, day.day, 6, tzinfo=UTC) + timedelta(
        seconds=n * (14 * 3600 / TRACES_PER_DAY) + rng.uniform(0, 300)
    )
    latency = round(rng.lognormvariate(0.3, 0.5) * (1.4 if out.output else 1.0), 3)
    failed = rng.random() < 0.02  # the provider occasionally fails in production
    feedback = None
    roll = rng.random()
    if out.output is not None and expected_items(out.output) != truth and roll < 0.5:
        feedback = {
            "score": 0,
            "comment": "order corrected at the window",
            "corrected_items": truth,
        }
    elif out.output is not None and roll < 0.05:
        feedback = {"score": 1, "comment": "customer confirmed the order at the window"}
    metadata = {
        "suite": "drive_thru",
        "prompt_version": prompt.partition_key,
        "category": category,
        "store_id": f"store-{n % 7:02d}",
    }
    if feedback:
        metadata["user_feedback"] = feedback
    usage = {
        "input": out.input_tokens,
        "output": out.output_tokens,
        "total": out.input_tokens + out.output_tokens,
    }
    return {
        "id": trace_id(day, n)[:16],
        "traceId": trace_id(day, n),
        "type": "AGENT",
        "name": TRACE_NAME,
        "startTime": iso(start),
        "endTime": iso(start + timedelta(seconds=latency)),
        "level": "ERROR" if failed else "DEFAULT",
        "statusMessage": "upstream model timed out" if failed else None,
        "input": json.dumps({"customer_utterance": utterance}),
        "output": None if failed else json.dumps(out.output),
        "metadata": metadata,
        "tags": ["production", f"prompt:{prompt.partition_key}"],
        "usageDetails": usage,
        "totalCost": round(prices.cost(PRICED_AS, out.input_tokens, out.output_tokens), 8),
        "latency": latency,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", nargs="+", default=["2026-11-19", "2026-11-20", "2026-11-21"])
    args = parser.parse_args()
    registry = LocalPromptRegistry(ROOT / "prompts")
    folder = ROOT / "datasets" / "drive_thru" / "traces"
    folder.mkdir(parents=True, exist_ok=True)
    for text in args.days:
        day = date.fromisoformat(text)
        lines = [json.dumps(o, sort_keys=True) for o in generate_day(day, registry)]
        (folder / f"{day}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{folder / f'{day}.jsonl'}: {len(lines)} traces")


if __name__ == "__main__":
    main()
