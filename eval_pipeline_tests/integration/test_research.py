"""The research suite: BM25 corpus, reference trajectories, teacher-forced stepwise runs."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from click.testing import CliRunner
from eval_examples.research.corpus import load_corpus, search_tool
from eval_examples.tool_agent import build_tool_graph
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from eval_pipeline.agents.adapters.stepwise import StepwiseSpec, judge_answers, stepwise
from eval_pipeline.cli import main
from eval_pipeline.core.running.runner import RunnerConfig, run_agent_sync
from eval_pipeline.core.suites.cases import select_tier
from eval_pipeline_tests.helpers import EXAMPLES, clean_cli_env, production_prompt
from eval_pipeline_tests.helpers import suite as project_suite

CORPUS = EXAMPLES / "datasets" / "research" / "corpus.jsonl"


def test_bm25_search_finds_the_entity():
    corpus = load_corpus(CORPUS)
    assert corpus.search("Arcwell Systems")[0].title == "Arcwell Systems"
    assert corpus.search("Velmora")[0].title == "Velmora"
    assert json.loads(search_tool(corpus).invoke({"query": "the"})) == []  # only stopwords


def test_dataset_has_checked_reference_trajectories():
    cases = project_suite("research").load_cases()
    assert len(cases) >= 15 and len(select_tier(cases, "smoke")) >= 5
    parallel = [
        c
        for c in cases
        if any(len(m.get("tool_calls") or []) == 2 for m in c.expected_output["trajectory"])
    ]
    assert parallel, "comparison questions search both entities in one step"


def call(query: str, step: int, i: int = 0) -> dict:
    return {
        "id": f"c{step}{i}",
        "type": "function",
        "function": {"name": "search", "arguments": json.dumps({"query": query})},
    }


REFERENCE = [
    {"role": "user", "content": "Where is the company founded by Ada Voss headquartered?"},
    {"role": "assistant", "content": "", "tool_calls": [call("Ada Voss", 0)]},
    {"role": "tool", "content": "[]", "tool_call_id": "c00"},
    {"role": "assistant", "content": "", "tool_calls": [call("Arcwell Systems", 1)]},
    {"role": "tool", "content": "[]", "tool_call_id": "c10"},
    {"role": "assistant", "content": "", "tool_calls": [call("Velmora", 2)]},
    {"role": "tool", "content": "[]", "tool_call_id": "c20"},
    {"role": "assistant", "content": "Arcwell Systems is headquartered in Velmora."},
]


class ScriptedModel(BaseChatModel):
    """The model boundary, scripted: answers step k like the reference except at step 1."""

    seen: list[int] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.seen.append(len(messages))
        step = sum(1 for m in messages if isinstance(m, AIMessage))
        if step == 1:  # diverges: searches the wrong entity
            reply = AIMessage(
                content="",
                tool_calls=[{"name": "search", "id": "x", "args": {"query": "Ada Voss bio"}}],
            )
        elif step < 3:
            args = json.loads(REFERENCE[1 + 2 * step]["tool_calls"][0]["function"]["arguments"])
            reply = AIMessage(content="", tool_calls=[{"name": "search", "id": "y", "args": args}])
        else:
            reply = AIMessage(content="Arcwell Systems is headquartered in Velmora.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def forced(model: BaseChatModel, spec: StepwiseSpec | None = None):
    """Stepwise runs of the ReAct graph on ``model`` against REFERENCE."""
    tools = [search_tool(load_corpus(CORPUS))]
    graph = build_tool_graph(model, tools, "system")
    return asyncio.run(stepwise(graph, spec or StepwiseSpec(node="agent"), REFERENCE, ()))


def test_stepwise_diverging_at_step_2_of_4_survives_a_quarter():
    model = ScriptedModel()
    result = forced(model)
    assert [s["score"] for s in result["steps"]] == [1.0, 0.0, 1.0, 1.0]
    assert result["survived_until"] == 0.25 and result["stepwise_score"] == 0.75
    assert "Ada Voss bio" in json.dumps(result["steps"][1]["produced"])
    # one model call per step, each on the reference prefix (system + 1, 3, 5, 7 messages)
    assert model.seen == [2, 4, 6, 8]


def test_cli_research_smoke_and_a_worse_prompt(tmp_path, monkeypatch):
    clean_cli_env(monkeypatch, tmp_path / "home")
    good = CliRunner().invoke(
        main, ["run", "--suite", "research", "--tier", "smoke", "--json", str(tmp_path / "r.json")]
    )
    assert good.exit_code == 0, good.output
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    assert summary["metrics"]["survived_until"] == 1.0
    worse = CliRunner().invoke(
        main,
        ["run", "--suite", "research", "--prompt-version", "2", "--json", str(tmp_path / "w.json")],
    )
    assert worse.exit_code == 1
    metrics = json.loads((tmp_path / "w.json").read_text())["summary"]["metrics"]
    assert metrics["survived_until"] < 1.0 and metrics["trajectory_strict_match"] < 1.0


def test_stepwise_final_answer_can_be_judged_by_an_llm_judge():
    from eval_pipeline.evaluators import llm_judge
    from eval_pipeline.llm.offline import OfflineChatModel

    rubric = "Does the answer name the headquarters city Velmora?"
    judge = judge_answers(llm_judge(rubric, OfflineChatModel()))
    result = forced(ScriptedModel(), StepwiseSpec(node="agent", answer_judge=judge))
    last = result["steps"][-1]
    assert last["kind"] == "answer" and last["score"] == 1.0 and last["comment"].startswith("judge")


class FailingAtStep(ScriptedModel):
    """The model server refuses the request of one step (e.g. a 500 on its tool turns)."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        if sum(1 for m in messages if isinstance(m, AIMessage)) == 2:
            raise RuntimeError("HTTP 500: validation error on an assistant turn")
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_a_failing_step_is_recorded_on_the_step_and_the_item_keeps_its_answer():
    """A teacher-forced step that errors scores 0 with its error; the other steps (and the
    item's free run) stand: the item is not turned into an error."""
    result = forced(FailingAtStep())
    assert [s["score"] for s in result["steps"]] == [1.0, 0.0, 0.0, 1.0]
    failed = result["steps"][2]
    assert failed["error"].startswith("RuntimeError: HTTP 500") and failed["produced"] is None
    assert failed["error_kind"] == "RuntimeError" and failed["comment"].startswith("error:")


def test_stepwise_calls_are_counted_in_tokens():
    from eval_pipeline.llm.model_settings import LLMSettings

    suite = project_suite("research")
    case = suite.load_cases()[0]
    agent = suite.make_agent(production_prompt(suite), LLMSettings.create(model="offline"))
    free = case.model_copy(update={"expected_output": None})  # no reference: no steps
    with_steps, free_only = run_agent_sync(agent, [case, free.model_copy(update={"id": "x"})],
                                           RunnerConfig())  # fmt: skip
    steps = len(with_steps.output["steps"])
    assert steps > 0 and "steps" not in free_only.output
    assert with_steps.usage["offline"]["calls"] == free_only.usage["offline"]["calls"] + steps
    assert with_steps.input_tokens > free_only.input_tokens


def test_a_project_can_have_an_llm_judge_step_similarity_for_every_step():
    """Seed 004's option: `stepwise: {judge: {steps: all}}` judges tool steps and answers with
    a pinned LLM judge instead of matching them (matching stays the default)."""
    from eval_pipeline.agents.adapters.stepwise import (
        StepJudgeConfig,
        StepwiseConfig,
        stepwise_spec,
    )
    from eval_pipeline.llm.model_settings import LLMSettings

    matched = forced(ScriptedModel(), stepwise_spec(StepwiseConfig(node="agent"),
                                                    LLMSettings.create()))  # fmt: skip
    assert not any(s["comment"].startswith("judge") for s in matched["steps"])
    config = StepwiseConfig(node="agent", judge=StepJudgeConfig(steps="all", pass_at=0.5))
    judged = forced(ScriptedModel(), stepwise_spec(config, LLMSettings.create()))
    kinds = {s["kind"] for s in judged["steps"]}
    assert kinds == {"tool_calls", "answer"}
    assert all(s["comment"].startswith("judge ") for s in judged["steps"]), judged["steps"]
    tool_steps = [s for s in judged["steps"] if s["kind"] == "tool_calls"]
    assert all(s["score"] == 1.0 for s in tool_steps)  # the scripted model repeats the reference
    answers_only = StepwiseConfig(node="agent", judge=StepJudgeConfig())
    spec = stepwise_spec(answers_only, LLMSettings.create())
    assert spec.answer_judge is not None and spec.step_judge is None
