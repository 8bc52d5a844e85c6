"""A LangGraph project as its repository ships it, evaluated through docs/own-agent.md.

The team's checkout is the zoo's copy of langchain-ai/memory-agent
(eval_pipeline_tests/zoo/memory_agent: ``langgraph.json`` declares the graph ``agent`` at
``./src/memory_agent/graph.py:graph``, a store with a semantic index, ``env: .env`` and
``dependencies: ["."]``; the graph compiles no store and searches ``runtime.store`` in every
call; its tool stores each memory under ``uuid4()``; its model is
``init_chat_model(Context.model)``, the team's own client). The page's commands run in
order from that checkout, outside this repository, with nothing written for eval-pipeline
but the cases: ``--agent`` names the graph's id in langgraph.json; the only endpoint
settings are the page's ``export EVAL_LLM_*`` line.

Before: init could not import ``memory_agent`` (it lives under ``src/``); run as
``memory_agent.graph:graph`` every item failed with ``'NoneType' object has no attribute
'asearch'`` and the run was a FAIL blaming the agent; one store shared by every case let a
case read the memories of another; the agent's own client never saw EVAL_LLM_*.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from eval_pipeline_tests.e2e.test_readme import FLOW, doc_block, shell, team_environment
from eval_pipeline_tests.model_server import LocalOpenAIServer
from eval_pipeline_tests.teams import ZOO

MODEL = "stub-1"
# The template's own prompt: no word of saving memories (the zoo's adds one).
WORSE_PROMPT = ("You are a helpful and friendly chatbot. Get to know the user! Ask questions! "
                "Be spontaneous!\n{user_info}\n\nSystem Time: {time}")  # fmt: skip
FACT = re.compile(r"\b(i love|my name is|i live in|i work as)\s+(?:an? )?(.+?)[.!]*$", re.I)
VERBS = {"i love": "loves", "my name is": "is named", "i live in": "lives in",
         "i work as": "works as"}  # fmt: skip
QUESTIONS = {"what do i love": ("loves", "You love"), "where do i live": ("lives in",
             "You live in"), "what is my name": ("is named", "Your name is")}  # fmt: skip


def case(case_id: str, said: str | list[str], tools: list[str], fields: list[str],
         category: str, grounded: bool = True) -> dict:  # fmt: skip
    given = {"message": said} if isinstance(said, str) else {"conversation": {"turns": said}}
    metadata = {"category": category, "difficulty": "easy", "tier": "smoke"}
    if not grounded:
        metadata["criteria"] = {"grounded": False}
    return {"id": case_id, "input": given, "metadata": metadata,
            "expected_output": {"expected_tools": tools, "expected_fields": fields}}  # fmt: skip


CASES = [
    case("tell-hobby", "Hi! I love hiking.", ["upsert_memory"], [], "tell"),
    case("tell-name", "My name is Ana.", ["upsert_memory"], [], "tell"),
    case("tell-home", "I live in Oslo.", ["upsert_memory"], [], "tell"),
    case("tell-job", "I work as a nurse.", ["upsert_memory"], [], "tell"),
    case("recall-hobby", ["I love sailing.", "What do I love?"], ["upsert_memory"],
         ["sailing"], "recall"),
    case("recall-home", ["I live in Lima.", "Where do I live?"], ["upsert_memory"], ["Lima"],
         "recall"),
    # Nothing told in this case: what another case stored must not be remembered here.
    case("recall-fresh", "What do I love?", [], ["know"], "recall", grounded=False),
    case("hello", "Hello!", [], [], "chit_chat", grounded=False),
]


class MemoryModel(BaseChatModel):
    """The model behind the team's endpoint, scripted: told by its system prompt to save
    facts with upsert_memory, it calls the tool for a fact the user states, then
    acknowledges; asked about the user, it answers from the <memories> of its system
    prompt, or says it does not know."""

    model_name: str = MODEL

    @property
    def _llm_type(self) -> str:
        return "scripted-memory"

    def bind_tools(self, tools, **kwargs):
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        reply = self.reply(messages)
        reply.usage_metadata = {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60}
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @staticmethod
    def reply(messages: list) -> AIMessage:
        system = " ".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
        if isinstance(messages[-1], ToolMessage):
            return AIMessage(content="Got it, I'll remember that.")
        said = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
        if fact := FACT.search(said):
            if "upsert_memory" not in system:
                return AIMessage(content="How nice! Tell me more about yourself.")
            content = f"User {VERBS[fact.group(1).lower()]} {fact.group(2)}"
            call = {"name": "upsert_memory", "id": f"call_memory_{len(messages)}",
                    "args": {"content": content, "context": "Said by the user."}}  # fmt: skip
            return AIMessage(content="", tool_calls=[call])
        for question, (verb, answer) in QUESTIONS.items():
            if question in said.lower():
                found = re.findall(rf"User {verb} ([^'\"]+)", system)
                return AIMessage(content=f"{answer} {found[-1]}." if found else
                                 "I don't know that yet: tell me!")  # fmt: skip
        return AIMessage(content="Hello! Tell me about yourself.")


def checkout(tmp_path: Path) -> Path:
    """The team's clone of the agent's repository, as it ships (plus the new prompt)."""
    root = tmp_path / "memory-agent"
    shutil.copytree(ZOO / "memory_agent", root,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    (root / "new-prompt.txt").write_text(WORSE_PROMPT)
    (root / ".gitignore").write_text(".env\n.eval_home\n")
    return root


def page_commands() -> list[str]:
    """The page's commands after the install, ``--agent`` naming the graph's id and
    ``git add`` the agent's package where this repository has it (src/)."""
    install, *rest = doc_block(FLOW)
    assert install.startswith("pip install ")
    return [c.replace("--agent my_agent.graph:build", "--agent agent").replace(
        " recordings my_agent", " recordings src") for c in rest]  # fmt: skip


@pytest.fixture(scope="module")
def followed(tmp_path_factory):
    """The checkout after the page's commands but the CI one, each run as the page prints
    it: (root, the team's environment, each command's process, the model server's
    counts, the CI command)."""
    tmp_path = tmp_path_factory.mktemp("langgraph-project")
    root = checkout(tmp_path)
    env = team_environment(root, tmp_path, yaml.safe_dump(CASES, sort_keys=False))
    *commands, ci = page_commands()
    done = {}
    with LocalOpenAIServer(chat_model=lambda name: MemoryModel(model_name=name),
                           models=[MODEL]) as server:  # fmt: skip
        for command in commands:
            if command.startswith("export "):  # the person's endpoint, for the "…" here
                for assignment in shlex.split(command)[1:]:
                    name = assignment.partition("=")[0]
                    env[name] = {"EVAL_LLM_BASE_URL": server.base_url,
                                 "EVAL_LLM_API_KEY": "sk-team-endpoint-key",
                                 "EVAL_LLM_MODEL": MODEL}[name]  # fmt: skip
                continue
            done[command] = shell(command, root, env)
        out = root / "out"
        done["inspect"] = shell(f"eval-pipeline run --suite support --json {out}/prod.json",
                                root, env)  # fmt: skip  (memoized: the production outputs)
        stats = dict(server.app.state.stats)
    return root, env, done, stats, ci


def test_a_langgraph_project_runs_as_declared_through_the_page(followed):
    root, _, done, stats, _ = followed
    ran = list(done.values())
    init = next(p for c, p in done.items() if c.startswith("eval-pipeline init"))
    said = " ".join(init.stdout.split())
    assert init.returncode == 0, init.stdout + init.stderr
    # init read langgraph.json: the graph's id, its store; the agent's own endpoint, probed
    assert "graph 'agent' is memory_agent.graph:graph" in said
    assert "fresh in-memory store (index openai:text-embedding-3-small, 1536 dims)" in said
    assert re.search(r"the agent's own OpenAI clients call http://127\.0\.0\.1:\d+/v1 "
                     r"\(EVAL_LLM_BASE_URL, as OPENAI_BASE_URL; key from EVAL_LLM_API_KEY, "
                     r"as OPENAI_API_KEY\); models from agent.context: support stub-1: "
                     r"reachable, 1 model\(s\)", said), said  # fmt: skip
    assert "sk-team-endpoint-key" not in init.stdout + init.stderr
    project = yaml.safe_load((root / "eval-pipeline.yaml").read_text())
    assert project["suites"]["support"]["agent"] == {
        "graph": "memory_agent.graph:graph", "context": {"model": "openai/stub-1"}}
    for command, process in done.items():
        if command == "inspect":  # (not the page's: its results file, read below)
            continue
        gated = command.startswith("eval-pipeline run") and "--label staging" in command
        assert process.returncode == (1 if gated else 0), (command, process.stdout,
                                                           process.stderr)  # fmt: skip
        assert "asearch" not in process.stdout + process.stderr
    production, staging = [p.stdout.strip().splitlines()[-1] for p in ran
                           if p.args[-1].startswith("eval-pipeline run")][:2]  # fmt: skip
    assert production.startswith("VERDICT: PASS"), production
    assert staging.startswith("VERDICT: FAIL"), staging
    # The agent's own client (init_chat_model) and the store's index called the endpoint.
    assert stats["by_model"].get(MODEL, 0) > 0 and stats["embeddings"] > 0


def test_each_item_has_a_store_of_its_own(followed):
    """Every case ran (no agent errors); a conversation remembered across its turns; the
    case that told nothing remembers nothing another case stored."""
    root = followed[0]
    result = json.loads((root / "out" / "prod.json").read_text())
    items = {i["item_id"]: i for i in result["items"]}
    assert set(items) == {c["id"] for c in CASES}
    assert {i["status"] for i in items.values()} == {"finished"}, items
    assert not [i for i in items.values() if i.get("error")], items
    for name in ("recall-hobby", "recall-home", "recall-fresh"):  # the answer named it
        assert items[name]["scores"]["completeness"] == 1.0, items[name]["score_details"]
    assert items["tell-hobby"]["scores"]["correctness"] == 1.0


def test_ci_replays_the_gate_with_no_endpoint_and_no_key(followed, tmp_path):
    root, env, _, _, ci = followed
    ci_env = {k: v for k, v in env.items() if not k.startswith(("EVAL_LLM_", "OPENAI_"))}
    ci_env["EVAL_HOME"] = str(tmp_path / "ci-home")
    replayed = shell(ci, root, ci_env)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert replayed.stdout.strip().splitlines()[-1].startswith("VERDICT: FAIL")
