"""Weather assistant on the raw OpenAI SDK: a function-calling loop, no LangChain at all.

Sources imitated: openai/openai-cookbook: examples/How_to_call_functions_with_chat_models.ipynb
and OpenAI's function-calling guide (platform.openai.com/docs/guides/function-calling):
``client = OpenAI()`` at module level, ``tools`` as JSON-schema dicts
(``{"type": "function", "function": {"name", "description", "parameters"}}``),
``client.chat.completions.create(model=..., messages=..., tools=tools)``, the assistant
message object appended to ``messages`` as is, each call's
``json.loads(tool_call.function.arguments)`` dispatched to a plain Python function and
answered with ``{"role": "tool", "tool_call_id": ..., "content": ...}``, looping until the
model answers without tool calls.

Written for our callable contract: ``answer(input, ctx)`` (sync) takes the case input
(``input["message"]``), ignores ``ctx``, and returns
``{"response": str, "tools_called": [names in call order]}``. ``OpenAI()`` reads
OPENAI_API_KEY / OPENAI_BASE_URL when the module is imported (it raises at import without a
key). No LangChain callbacks are involved, so nothing here is traced by LangChain.
"""

import json

from openai import OpenAI

SYSTEM_PROMPT = "You are a weather assistant. Use the tools for every weather or time question."

WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}

client = OpenAI()


def get_weather(city):
    """Get the current weather in a given city"""
    return WEATHER.get(city.lower(), "unknown city")


def get_time(city):
    """Get the local time in a given city"""
    return TIMES.get(city.lower(), "unknown city")


available_functions = {"get_weather": get_weather, "get_time": get_time}

tools = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a given city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city, e.g. Paris"},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the local time in a given city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city, e.g. Paris"},
                },
                "required": ["city"],
            },
        },
    },
]


def answer(input, ctx):
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": input["message"]},
    ]
    tools_called = []
    for _ in range(5):
        response = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=messages,
            tools=tools,
        )
        response_message = response.choices[0].message
        tool_calls = response_message.tool_calls
        if not tool_calls:
            return {"response": response_message.content or "", "tools_called": tools_called}
        messages.append(response_message)  # extend conversation with assistant's reply
        for tool_call in tool_calls:
            function_name = tool_call.function.name
            function_to_call = available_functions[function_name]
            function_args = json.loads(tool_call.function.arguments)
            function_response = function_to_call(city=function_args.get("city"))
            tools_called.append(function_name)
            messages.append(
                {
                    "tool_call_id": tool_call.id,
                    "role": "tool",
                    "name": function_name,
                    "content": function_response,
                }
            )
    return {"response": "", "tools_called": tools_called}
