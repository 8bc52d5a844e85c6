"""The multi-agent and human-in-the-loop zoo (issue 36): for each agent, a scripted chat
model the local OpenAI-compatible server answers with, the team's cases, and the edit
that makes a worse version.

Each model plays its agent from the prompt and the tools it is offered, as a real model
does: it calls the tools the question needs (several at once where the agent allows),
answers from their results, and, when the edited prompt no longer tells it to use the
tools, answers from nothing: the worse version. Tool-call ids are random, as OpenAI's are.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from eval_pipeline_tests.helpers import CONFIG_ENV

ZOO = Path(__file__).parent / "zoo"
CLI = str(Path(sys.executable).parent / "eval-pipeline")


class TeamShell:
    """The CLI as a team runs it in its repository ``root``: a process of its own with
    ``PYTHONHASHSEED=random``, the agent's own OpenAI client pointed at ``model`` (or, for
    a replay, no endpoint and no key at all)."""

    def __init__(self, root: Path, model: Any):
        self.root, self.model = root, model

    def cli(self, *args: str, endpoint: bool = True) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items()
               if k not in CONFIG_ENV and not k.startswith("OPENAI_")}  # fmt: skip
        env |= {"EVAL_HOME": str(self.root / ".eval_home"), "PYTHONHASHSEED": "random"}
        if endpoint:
            env |= {"OPENAI_BASE_URL": self.model.base_url, "OPENAI_API_KEY": "sk-team"}
        return subprocess.run([CLI, *args], cwd=self.root, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip


class ScriptedModel(BaseChatModel):
    """A chat model whose answer is ``reply(messages, tools offered)``."""

    model_name: str = "scripted"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        tools = {t["function"]["name"] for t in kwargs.get("tools") or []}
        reply = self.reply(list(messages), tools)
        reply.usage_metadata = {"input_tokens": 20 * len(messages), "output_tokens": 12,
                                "total_tokens": 20 * len(messages) + 12}  # fmt: skip
        reply.response_metadata = {"model_name": self.model_name}
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def reply(self, messages: list, tools: set[str]) -> AIMessage:
        raise NotImplementedError


def question(messages: Sequence[Any]) -> str:
    return next(str(m.content) for m in messages if isinstance(m, HumanMessage))


def system(messages: Sequence[Any]) -> str:
    return " ".join(str(m.content) for m in messages if isinstance(m, SystemMessage))


def calls(*wanted: tuple[str, dict[str, Any]]) -> AIMessage:
    """One message asking for these tools at once, each with a fresh random id."""
    return AIMessage(content="", tool_calls=[
        {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:24]}"}
        for name, args in wanted
    ])  # fmt: skip


def own_calls(messages: Sequence[Any], tools: set[str]) -> list[dict[str, Any]]:
    """The calls made so far to the tools this agent is offered."""
    return [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls
            if c["name"] in tools]  # fmt: skip


def results(messages: Sequence[Any], tools: set[str]) -> list[ToolMessage]:
    """The results of this agent's own tool calls (no tool name over the wire)."""
    asked = {c["id"] for c in own_calls(messages, tools)}
    return [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id in asked]


class HotelModel(ScriptedModel):
    """zoo/human_approval: book the hotel asked for; report what the reviewer decided."""

    def reply(self, messages, tools):
        done = results(messages, tools)
        if done:
            said = str(done[-1].content)
            return AIMessage(said if said.startswith("Successfully") else
                             f"I did not book it: {said}")  # fmt: skip
        if "Book hotels" not in system(messages):
            return AIMessage("I cannot book hotels, sorry.")
        hotel = re.search(r"McKittrick|Ritz|Hilton", question(messages))
        return calls(("book_hotel", {"hotel_name": hotel[0] if hotel else "Hilton"}))


class SwarmModel(ScriptedModel):
    """zoo/swarm_pair: Alice adds with ``add`` (or hands a request for Bob to him), Bob
    talks like a pirate and hands sums back to Alice (``ask_alice``)."""

    def reply(self, messages, tools):
        asked = question(messages)
        numbers = [int(n) for n in re.findall(r"\d+", asked)]
        if "add" in tools:  # Alice
            done = [m for m in results(messages, {"add"})]
            if done:
                return AIMessage(f"The answer is {done[-1].content}.")
            handed = [c for c in own_calls(messages, tools) if c["name"] == "transfer_to_bob"]
            if "bob" in asked.lower() and not handed:
                return calls(("transfer_to_bob", {}))
            if "add tool" not in system(messages):
                return AIMessage("The answer is 42.")
            return calls(("add", {"a": numbers[0], "b": numbers[1]}))
        if len(numbers) >= 2 and not own_calls(messages, tools):  # Bob, asked a sum
            return calls(("ask_alice", {"task_description": f"add {numbers[0]} and {numbers[1]}"}))
        return AIMessage("Arr, matey! Bob at yer service.")


CITIES = ("sf", "nyc", "oslo", "lima")


class WeatherFanModel(ScriptedModel):
    """zoo/parallel_tools: every city asked about in one message of parallel calls."""

    def reply(self, messages, tools):
        if "Look up every city" not in system(messages):
            return AIMessage("It is probably sunny everywhere.")
        asked = question(messages).lower()
        done = results(messages, tools)
        weather = [m for m in done if str(m.content).startswith("It's")]
        if weather:
            return AIMessage(" ".join(str(m.content) for m in weather))
        cities = [c for c in CITIES if re.search(rf"\b{c}\b", asked)]
        if "coolest" in asked:
            if not done:
                return calls(("get_coolest_cities", {}))
            cities = [c.strip() for c in str(done[-1].content).split(",")]
        return calls(*(("get_weather", {"location": c.upper()}) for c in cities))


class AirlineModel(ScriptedModel):
    """zoo/airline_support: the passenger's flights, the policies, a cancellation."""

    def reply(self, messages, tools):
        if "Use the provided tools" not in system(messages):
            return AIMessage("I'm not sure; please check the website.")
        asked = question(messages).lower()
        done = results(messages, tools)
        made = [c["name"] for c in own_calls(messages, tools)]
        if "cancel" in asked:
            if "fetch_user_flight_information" not in made:
                return calls(("fetch_user_flight_information", {}))
            if "cancel_ticket" not in made:
                ticket = json.loads(str(done[-1].content))[0]["ticket_no"]
                return calls(("cancel_ticket", {"ticket_no": ticket}))
            return AIMessage(str(done[-1].content))
        if done:
            return AIMessage(f"Here is what I found: {done[-1].content}")
        if "flight" in asked:
            return calls(("fetch_user_flight_information", {}))
        return calls(("lookup_policy", {"query": asked}))


@dataclass(frozen=True)
class Case:
    id: str
    message: str
    tools: list[str]
    facts: list[str]
    resume: Any = None  # the case's input.resume
    paused: bool | None = None  # expected_output.paused

    def as_dict(self) -> dict[str, Any]:
        given: dict[str, Any] = {"message": self.message}
        if self.resume is not None:
            given["resume"] = self.resume
        expected: dict[str, Any] = {"expected_tools": self.tools, "expected_fields": self.facts}
        if self.paused is not None:
            expected["paused"] = self.paused
        return {"id": self.id, "input": given, "expected_output": expected,
                "metadata": {"category": self.id.split("-")[0], "difficulty": "easy",
                             "tier": "full"}}  # fmt: skip


@dataclass(frozen=True)
class Team:
    """One zoo agent as a team's repository holds it."""

    package: str  # under zoo/, copied to the team's root under the same name
    agent: str  # what eval-pipeline.yaml points at
    model: Callable[[str], ScriptedModel]
    cases: list[Case]
    prompt_file: str  # the module whose prompt constant the worse version edits
    prompt: str  # the constant
    worse: str  # its worse text
    agent_options: dict[str, Any] = field(default_factory=dict)

    def write(self, root: Path) -> None:
        shutil.copytree(ZOO / self.package, root / self.package,
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
        (root / "evals" / self.package).mkdir(parents=True)
        cases = [c.as_dict() for c in self.cases]
        (root / "evals" / self.package / "cases.yaml").write_text(yaml.safe_dump(cases))
        agent: Any = {"graph": self.agent, **self.agent_options} if self.agent_options \
            else self.agent  # fmt: skip
        suite = {"agent": agent, "dataset": f"evals/{self.package}",
                 "evaluators": ["correctness", "completeness"],
                 "thresholds": {"primary_metric": "correctness",
                                "min_mean": {"correctness": 0.8, "completeness": 0.8}}}  # fmt: skip
        (root / "eval-pipeline.yaml").write_text(yaml.safe_dump({"suites": {self.package: suite}}))

    def make_worse(self, root: Path) -> None:
        """Edit the prompt constant, whatever its layout (one line or a parenthesised
        concatenation)."""
        path = root / self.package / self.prompt_file
        source = path.read_text()
        start = source.index(f"{self.prompt} = ")
        rest = source[start:]
        end = start + (rest.index(")\n") + 2 if rest.startswith(f"{self.prompt} = (")
                       else rest.index("\n") + 1)  # fmt: skip
        path.write_text(f"{source[:start]}{self.prompt} = {self.worse!r}\n{source[end:]}")


REVIEW = "book_hotel"
TEAMS = {
    "human_approval": Team(
        "human_approval",
        "human_approval.agent:agent",
        lambda n: HotelModel(model_name=n),
        [
            Case(
                "approve-mckittrick",
                "Book a stay at the McKittrick hotel",
                [REVIEW],
                ["Successfully booked", "$420"],
                resume=[[{"type": "accept"}]],
            ),
            Case(
                "edit-ritz",
                "Book a stay at the Ritz",
                [REVIEW],
                ["Hilton", "$250"],
                resume={REVIEW: [[{"type": "edit", "args": {"args": {"hotel_name": "Hilton"}}}]]},
            ),
            Case(
                "deny-ritz",
                "Book a stay at the Ritz tonight",
                [REVIEW],
                ["did not book", "Too expensive"],
                resume=[[{"type": "response", "args": "Too expensive: do not book it."}]],
            ),
            Case("waits-hilton", "Book a stay at the Hilton", [REVIEW], [], paused=True),
        ],
        "agent.py",
        "SYSTEM_PROMPT",
        "You are a booking assistant. Never book anything.",
    ),
    "swarm_pair": Team(
        "swarm_pair",
        "swarm_pair.agent:app",
        lambda n: SwarmModel(model_name=n),
        [
            Case("sum-5-7", "what's 5 + 7?", ["add"], ["12"]),
            Case("sum-19-4", "what is 19 + 4?", ["add"], ["23"]),
            Case("pirate-hello", "i'd like to speak to Bob", [], ["Arr"]),
            Case("pirate-sum", "Bob, what's 2 + 3?", ["add"], ["answer is 5"]),
            # the same written with the handoffs, the prebuilt one and Bob's own ask_alice
            Case("handoff-hello", "let me speak to Bob", ["transfer_to_bob"], ["Arr"]),
            Case(
                "handoff-sum",
                "Bob, what is 4 + 4?",
                ["transfer_to_bob", "ask_alice", "add"],
                ["answer is 8"],
            ),
        ],
        "agent.py",
        "ALICE_PROMPT",
        "You are Alice. Answer sums from memory.",
    ),
    "parallel_tools": Team(
        "parallel_tools",
        "parallel_tools.agent:app",
        lambda n: WeatherFanModel(model_name=n),
        [
            Case(
                "two-cities",
                "What's the weather in SF and NYC?",
                ["get_weather"],
                ["60 degrees", "90 degrees"],
            ),
            Case(
                "three-cities",
                "Weather in Oslo, Lima and SF please",
                ["get_weather"],
                ["snowing", "cloudy", "foggy"],
            ),
            Case(
                "coolest-cities",
                "How is the weather in the coolest cities?",
                ["get_coolest_cities", "get_weather"],
                ["foggy", "sunny"],
            ),
        ],
        "agent.py",
        "SYSTEM_PROMPT",
        "You are a weather assistant. Answer from what you know.",
    ),
    "airline_support": Team(
        "airline_support",
        "airline_support.agent:part_1_graph",
        lambda n: AirlineModel(model_name=n),
        [
            Case(
                "flight-mine",
                "When is my flight?",
                ["fetch_user_flight_information"],
                ["LX0112", "2024-04-30"],
            ),
            Case("policy-baggage", "What is the baggage allowance?", ["lookup_policy"], ["8 kg"]),
            Case("policy-refund", "Can I get a refund?", ["lookup_policy"], ["24 hours"]),
            Case(
                "cancel-mine",
                "Please cancel my ticket",
                ["fetch_user_flight_information", "cancel_ticket"],
                ["successfully cancelled"],
            ),
        ],
        "agent.py",
        "PRIMARY_ASSISTANT_PROMPT",
        "You are a helpful customer support assistant for Swiss Airlines. Answer from memory.",
        agent_options={"configurable": {"passenger_id": "3442 587242"}},
    ),
}
