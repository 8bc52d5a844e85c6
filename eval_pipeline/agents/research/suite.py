"""The research suite (seed 004): multi-hop questions over a search tool, scored on the
final answer, on the whole trajectory, and step by step against reference trajectories."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from eval_pipeline.agents.research.agent import ResearchAgent
from eval_pipeline.agents.research.corpus import load_corpus, search_tool
from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.prompts import PromptVersion
from eval_pipeline.core.suite import Suite
from eval_pipeline.evaluators import trajectory_match
from eval_pipeline.evaluators.research import answer_correct, stepwise_score, survived_until
from eval_pipeline.evaluators.trajectory import normalize_messages
from eval_pipeline.llm.factory import create_chat_model
from eval_pipeline.llm.settings import LLMSettings

CATEGORIES = ("single_hop", "two_hop", "comparison")


def validate_case(case: GoldenCase) -> list[tuple[str, str]]:
    problems = []
    if not isinstance(case.input.get("question"), str):
        problems.append(("input.question", "required, a string"))
    expected = case.expected_output or {}
    if not isinstance(expected.get("answer"), str):
        problems.append(("expected_output.answer", "required, the reference answer"))
    try:
        messages = normalize_messages(expected.get("trajectory"))
    except (ValueError, KeyError, TypeError) as exc:
        return [*problems, ("expected_output.trajectory", f"not a message list: {exc}")]
    if not messages or messages[0]["role"] != "user" or messages[-1]["role"] != "assistant":
        problems.append(
            (
                "expected_output.trajectory",
                "OpenAI messages from the user question to the final answer",
            )
        )
    return problems


def make_agent(prompt: PromptVersion, settings: LLMSettings, corpus_path: Path) -> ResearchAgent:
    return ResearchAgent(
        create_chat_model(settings),
        [search_tool(load_corpus(corpus_path))],
        prompt,
        model_name=settings.model,
        base_seed=settings.seed,
    )


def build_suite(datasets_dir: Path) -> Suite:
    return Suite(
        name="research",
        dataset_dir=datasets_dir / "research",
        prompt_name="research/agent",
        categories=CATEGORIES,
        absence_categories=(),
        make_agent=partial(make_agent, corpus_path=datasets_dir / "research" / "corpus.jsonl"),
        evaluators=(
            answer_correct,
            trajectory_match(mode="strict"),
            stepwise_score,
            survived_until,
        ),
        validate_case=validate_case,
    )
