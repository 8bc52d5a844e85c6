"""LangGraph projects as declared: ``langgraph.json`` read as the LangGraph CLI reads it,
each item's own store, the prompt under test in a template's ``Context.system_prompt``, and
where the agent's own model clients are pointed (llm/agent_endpoint.py)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from langgraph.graph import StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from eval_pipeline.agents import langgraph_json
from eval_pipeline.agents.adapters.graph import GraphAgent, GraphOptions, context_model
from eval_pipeline.agents.adapters.stores import StoreSpec
from eval_pipeline.agents.context import AgentContext
from eval_pipeline.agents.langgraph_json import StoreIndex
from eval_pipeline.agents.project_errors import ProjectError
from eval_pipeline.core.prompts.labels import PromptVersion
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.llm.agent_endpoint import agent_endpoint, agent_environment, agent_variables
from eval_pipeline.llm.model_settings import REPLAY_KEY, LLMSettings
from eval_pipeline_tests.teams import ZOO

ENDPOINT = LLMSettings.create(model="stub-1", base_url="http://127.0.0.1:9/v1",
                              api_key="sk-eval-endpoint")  # fmt: skip


def test_memory_agents_langgraph_json_reads_as_the_server_reads_it(tmp_path):
    root = tmp_path / "memory-agent"
    shutil.copytree(ZOO / "memory_agent", root)
    (root / ".env").write_text("# keys\nexport OPENAI_API_KEY='sk-from-dotenv'\nMODEL=openai/x"
                               "  # the context's\n")  # fmt: skip
    found = langgraph_json.find(root)
    assert found is not None
    assert found.graphs == {"agent": "memory_agent.graph:graph"}  # from ./src/…/graph.py
    assert found.roots[0] == (root / "src").resolve()  # dependencies ["."]: its src/ layout
    assert found.store and found.index == StoreIndex(1536, "openai:text-embedding-3-small")
    assert not found.checkpointer
    assert found.env == {"OPENAI_API_KEY": "sk-from-dotenv", "MODEL": "openai/x"}
    assert found.graph_id("memory_agent.graph:graph") == "agent"
    assert langgraph_json.find(tmp_path) is None
    mixed = json.loads((root / "langgraph.json").read_text())
    mixed["graphs"]["web"] = "./src/web/graph.ts:graph"  # a JavaScript graph: not ours to run
    (root / "langgraph.json").write_text(json.dumps(mixed))
    assert langgraph_json.find(root).graphs == {"agent": "memory_agent.graph:graph"}


@pytest.mark.parametrize(("declared", "expected"), [
    ({"graphs": {"agent": "./nowhere.py:graph"}}, "field 'graphs.agent': './nowhere.py:graph': "
     "no such Python file"),
    ({"graphs": {"agent": "graph"}}, "field 'graphs.agent': \"graph\" is not "
     "./path/to/file.py:attribute or package.module:attribute"),
    ({"graphs": {}}, "field 'graphs': give at least one graph"),
    ({"graphs": {"a": "m:g"}, "store": {"index": {"dims": "x", "embed": "openai:e"}}},
     "field 'store.index': needs dims (a number) and embed"),
    ({"graphs": {"a": "m:g"}, "dependencies": ["./libs/gone"]},
     "field 'dependencies': './libs/gone': no such directory"),
    ({"graphs": {"a": "m:g"}, "env": 3}, "field 'env': expected a file name or an object"),
])  # fmt: skip
def test_a_langgraph_json_that_cannot_be_used_names_file_field_and_value(tmp_path, declared,
                                                                          expected):  # fmt: skip
    (tmp_path / "langgraph.json").write_text(json.dumps(declared))
    with pytest.raises(ProjectError) as raised:
        langgraph_json.find(tmp_path)
    assert f"{tmp_path / 'langgraph.json'}: {expected}" in str(raised.value)
    assert raised.value.exit_code == 2


class Seen(TypedDict, total=False):
    messages: list
    seen: list


async def remember(state: Seen, runtime: Runtime) -> dict:
    """What the store held before this item, then one memory of its own."""
    assert runtime.store is not None
    before = [item.key for item in await runtime.store.asearch(("memories",))]
    await runtime.store.aput(("memories",), key=f"m{len(before)}", value={"text": "x"})
    return {"seen": before}


def memory_graph():
    builder = StateGraph(Seen)
    builder.add_node(remember)
    builder.add_edge("__start__", "remember")
    return builder.compile()  # no store: the server's (and ours) is given per item


def context(prompt: PromptVersion | None = None) -> AgentContext:
    return AgentContext(suite="memory", dataset_dir=Path("."), settings=LLMSettings(),
                        prompt_version=prompt)  # fmt: skip


def case(case_id: str, said: object = "hi") -> GoldenCase:
    metadata = {"category": "memory", "difficulty": "easy", "tier": "smoke"}
    return GoldenCase.model_validate({"id": case_id, "input": {"message": said},
                                      "expected_output": {}, "metadata": metadata})  # fmt: skip


def test_each_item_runs_with_a_store_of_its_own():
    """A graph compiled without a store gets one (it crashed on ``runtime.store``), and
    no item reads what another wrote, repeats and concurrent items included."""
    agent = GraphAgent(memory_graph(), GraphOptions(state_fields=("seen",)), context())

    async def items():
        return await asyncio.gather(*(agent.run(case(f"c{i}"), repeat=r)
                                      for i in range(3) for r in range(2)))  # fmt: skip

    assert [r.output["seen"] for r in asyncio.run(items())] == [[]] * 6


def test_a_declared_index_embeds_with_the_teams_own_function(tmp_path):
    (tmp_path / "embed.py").write_text("def embed(texts):\n    return [[1.0, float(len(t))] "
                                       "for t in texts]\n")  # fmt: skip
    spec = StoreSpec(StoreIndex(dims=2, embed="./embed.py:embed"), tmp_path)
    store = spec.fresh(memory_graph())
    store.put(("m",), "k", {"text": "hello"})
    assert [i.key for i in store.search(("m",), query="hello")] == ["k"]
    assert spec.fresh(memory_graph()) is not store and not spec.fresh(memory_graph()).search(("m",))


def test_a_templates_context_gets_the_prompt_under_test_and_names_its_model():
    from memory_agent_context import Context  # (the zoo's copy, imported below)

    builder = StateGraph(Seen, context_schema=Context)
    builder.add_node(remember)
    builder.add_edge("__start__", "remember")
    graph = builder.compile()
    prompt = PromptVersion(name="memory/assistant", version=2, type="text",
                           prompt="Save every fact. {user_info} {time}")  # fmt: skip
    ctx = context(prompt)
    agent = GraphAgent(graph, GraphOptions(context={"model": "openai/stub-1"}), ctx)
    assert agent.context.system_prompt == "Save every fact. {user_info} {time}"
    assert agent.context.model == "openai/stub-1" and ctx.prompt_read
    assert context_model(graph) == "anthropic/claude-sonnet-4-5-20250929"  # the default
    assert context_model(graph, {"model": "openai/stub-1"}) == "openai/stub-1"
    unprompted = GraphAgent(graph, GraphOptions(), context())
    assert unprompted.context.system_prompt.startswith("You are a helpful and friendly")


@pytest.fixture(autouse=True)
def _zoo_context(monkeypatch, tmp_path):
    """The zoo's memory-agent Context as a module of its own (its package imports the graph)."""
    source = (ZOO / "memory_agent" / "src" / "memory_agent" / "context.py").read_text()
    prompts = (ZOO / "memory_agent" / "src" / "memory_agent" / "prompts.py").read_text()
    (tmp_path / "memory_agent_prompts.py").write_text(prompts)
    (tmp_path / "memory_agent_context.py").write_text(
        source.replace("from memory_agent import prompts",
                       "import memory_agent_prompts as prompts"))  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("MODEL", "SYSTEM_PROMPT", "USER_ID"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(("environ", "declared", "replay", "expected"), [
    # one export of EVAL_LLM_* reaches the agent's own OpenAI clients
    ({}, {}, False, {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                     "OPENAI_API_KEY": "sk-eval-endpoint"}),
    # OpenAI's own API with EVAL_LLM_API_KEY: the key alone
    ({}, {}, "key only", {"OPENAI_API_KEY": "sk-eval-endpoint"}),
    # the team's own OPENAI_* win (both are theirs: no half of each)
    ({"OPENAI_API_KEY": "sk-theirs"}, {}, False, {}),
    ({"OPENAI_BASE_URL": "http://gw/v1"}, {}, False, {}),
    # langgraph.json's env fills what is unset, after EVAL_LLM_*
    ({}, {"OPENAI_API_KEY": "sk-dotenv", "USER_ID": "u1"}, False,
     {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-eval-endpoint",
      "USER_ID": "u1"}),
    ({"USER_ID": "mine", "OPENAI_API_KEY": "sk-theirs"}, {"USER_ID": "u1"}, False, {}),
    # a replay lends placeholder keys, and points nothing anywhere
    ({}, {}, True, {"OPENAI_API_KEY": REPLAY_KEY, "ANTHROPIC_API_KEY": REPLAY_KEY}),
])  # fmt: skip
def test_where_the_agents_own_clients_are_pointed(environ, declared, replay, expected):
    settings = {True: LLMSettings(), False: ENDPOINT,
                "key only": LLMSettings.create(api_key="sk-eval-endpoint")}[replay]
    assert agent_variables(settings, declared, replay=replay is True,
                           environ=environ) == expected  # fmt: skip


def test_the_agents_environment_is_set_while_it_runs_and_said_without_its_key(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with agent_environment(ENDPOINT) as lent:
        import os

        assert os.environ["OPENAI_BASE_URL"] == "http://127.0.0.1:9/v1" and lent
        with agent_environment(ENDPOINT) as inner:  # nested: the outer one's stay
            assert inner == {}
        assert os.environ["OPENAI_API_KEY"] == "sk-eval-endpoint"
    assert "OPENAI_BASE_URL" not in os.environ and "OPENAI_API_KEY" not in os.environ
    said = agent_endpoint(ENDPOINT, {}, {}).describe()
    assert said == ("http://127.0.0.1:9/v1 (EVAL_LLM_BASE_URL, as OPENAI_BASE_URL; key from "
                    "EVAL_LLM_API_KEY, as OPENAI_API_KEY)")  # fmt: skip
    theirs = agent_endpoint(ENDPOINT, {}, {"OPENAI_API_KEY": "sk-theirs"}).describe()
    assert theirs == ("https://api.openai.com/v1 (OpenAI's default: no OPENAI_BASE_URL; key "
                      "from OPENAI_API_KEY in the environment)")  # fmt: skip
