"""A stranger's project, written into a temporary directory: a weather agent of their own
(a prebuilt ReAct graph, an async callable, or an HTTP service), their cases and prompts,
and the model that plays their agent's LLM behind a local OpenAI-compatible server.

Nothing here is imported by the project under test: the agent package is written as files
and imported by the CLI from the stranger's directory, as a team's own code would be.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

CITIES = ("Paris", "Oslo", "Tokyo", "Lima")
WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}

# The agent's two tools (tools.py of the team's package).
TOOLS = '''
from langchain_core.tools import tool

WEATHER = {weather}
TIMES = {times}


@tool
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return WEATHER.get(city.lower(), "unknown city")


@tool
def get_time(city: str) -> str:
    """Local time in a city."""
    return TIMES.get(city.lower(), "unknown city")
'''

# The agent: the model and the prompt from ctx.
REACT_AGENT = '''
"""Our weather assistant (a prebuilt ReAct graph)."""
import warnings

from .tools import get_time, get_weather

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


def build(ctx):
    return create_react_agent(ctx.model, [get_weather, get_time], prompt=ctx.system_prompt())
'''

CALLABLE_AGENT = '''
"""Our weather assistant, no LangGraph: an async function that calls the model itself."""
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

from .tools import get_time, get_weather

TOOLS = {t.name: t for t in (get_weather, get_time)}


async def answer(input, ctx):
    model = ctx.model.bind_tools(list(TOOLS.values()))
    messages = [SystemMessage(ctx.system_prompt()), HumanMessage(input["message"])]
    called = []
    for _ in range(4):
        reply = await model.ainvoke(messages, config={"callbacks": list(ctx.callbacks)})
        messages.append(reply)
        if not reply.tool_calls:
            return {"response": reply.content, "tools_called": called}
        for call in reply.tool_calls:
            called.append(call["name"])
            result = TOOLS[call["name"]].invoke(call["args"])
            messages.append(ToolMessage(result, tool_call_id=call["id"]))
    return {"response": "", "tools_called": called}
'''

PROMPT_V1 = "You are a weather assistant. Use the tools for every weather or time question."
PROMPT_V2 = "You are a weather assistant. Answer from what you know, quickly."

CASES = [
    ("w-paris", "What's the weather in Paris?", ["get_weather"], ["sunny"], "weather", "smoke"),
    ("w-oslo", "How is the weather in Oslo today?", ["get_weather"], ["snow"], "weather", "smoke"),
    ("t-tokyo", "What time is it in Tokyo?", ["get_time"], ["22:00"], "time", "smoke"),
    ("t-lima", "Tell me the local time in Lima", ["get_time"], ["08:00"], "time", "full"),
    ("both-paris", "Weather and time in Paris please", ["get_weather", "get_time"],
     ["sunny", "14:00"], "both", "full"),
    ("hello", "Hello there!", [], [], "chit_chat", "smoke"),
]  # fmt: skip


def write_project_files(root: Path, package: str = "weather_agent", kind: str = "react") -> None:
    """The agent package and the local prompt registry (the project file comes from init)."""
    source = REACT_AGENT if kind == "react" else CALLABLE_AGENT
    (root / package).mkdir(parents=True, exist_ok=True)
    (root / package / "__init__.py").write_text("")
    (root / package / "tools.py").write_text(TOOLS.format(weather=repr(WEATHER), times=repr(TIMES)))
    (root / package / "agent.py").write_text(source)
    for version, text in ((1, PROMPT_V1), (2, PROMPT_V2)):
        folder = root / "prompts" / "weather" / "assistant"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"v{version}.yaml").write_text(
            f"type: text\nconfig: {{temperature: 0.0}}\nprompt: {json.dumps(text)}\n"
        )
    labels = "weather/assistant:\n  production: 1\n  staging: 2\n"
    (root / "prompts" / "labels.yaml").write_text(labels)


def cases_yaml() -> str:
    rows = []
    for case_id, message, tools, fields, category, tier in CASES:
        grounded = "" if tools else "\n    criteria: {grounded: false}"
        expected = {"expected_tools": tools, "expected_fields": fields}
        rows.append(textwrap.dedent(f"""\
            - id: {case_id}
              input: {{message: {json.dumps(message)}}}
              expected_output: {json.dumps(expected)}
              metadata:
                category: {category}
                difficulty: easy
                tier: {tier}""") + grounded)  # fmt: skip
    return "\n".join(rows) + "\n"


class WeatherModel(BaseChatModel):
    """The LLM of the stranger's agent, scripted: with a prompt that says to use the tools,
    it calls get_weather / get_time for the city asked about, then answers from the tool
    results; told to answer from what it knows, it answers without tools (and gets the
    facts wrong). Deterministic, with usage like a real endpoint."""

    model_name: str = "weather-model"

    @property
    def _llm_type(self) -> str:
        return "scripted-weather"

    def bind_tools(self, tools: Any, **kwargs: Any):
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        reply = self.reply(messages)
        prompt_text = json.dumps([str(m.content) for m in messages])
        reply.usage_metadata = {"input_tokens": len(prompt_text) // 4 + 1,
                                "output_tokens": len(str(reply.content)) // 4 + 1,
                                "total_tokens": len(prompt_text) // 4 + 2}  # fmt: skip
        reply.response_metadata = {"model_name": self.model_name}
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @staticmethod
    def reply(messages: list) -> AIMessage:
        system = " ".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
        question = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
        results = [m for m in messages if isinstance(m, ToolMessage)]
        city = next((c for c in CITIES if c.lower() in question.lower()), None)
        if city is None:
            return AIMessage(content="Hello! Ask me about the weather or the time in a city.")
        if results or "use the tools" not in system.lower():
            facts = "; ".join(str(m.content) for m in results) or "probably mild, around noon"
            return AIMessage(content=f"In {city}: {facts}.")
        wanted = [("weather", "get_weather"), ("time", "get_time")]
        calls = [{"name": tool, "args": {"city": city}, "id": f"call_{tool}_{city}"}
                 for word, tool in wanted if re.search(word, question, re.IGNORECASE)]  # fmt: skip
        return AIMessage(content="", tool_calls=calls)


def weather_service():
    """The team's agent deployed as a service: POST the case input, get the output. It
    reads the prompt version under test from X-Eval-Prompt-Version: v1 uses its tools, v2
    answers from memory (like WeatherModel)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    seen: list[dict] = []

    async def answer(request: Request) -> JSONResponse:
        body = await request.json()
        seen.append({"body": body, "headers": dict(request.headers)})
        prompt = PROMPT_V1 if request.headers.get("x-eval-prompt-version") == "1" else PROMPT_V2
        messages = [SystemMessage(prompt), HumanMessage(body["message"])]
        first = WeatherModel.reply(messages)
        called = [c["name"] for c in first.tool_calls]
        for call in first.tool_calls:
            table = WEATHER if call["name"] == "get_weather" else TIMES
            messages += [first, ToolMessage(table[call["args"]["city"].lower()],
                                            tool_call_id=call["id"])]  # fmt: skip
        final = WeatherModel.reply(messages) if called else first
        usage = {"model": "service-model", "input_tokens": 40, "output_tokens": 12}
        return JSONResponse({"response": final.content, "tools_called": called, "usage": usage})

    app = Starlette(routes=[Route("/agent", answer, methods=["POST"])])
    app.state.seen = seen
    return app
