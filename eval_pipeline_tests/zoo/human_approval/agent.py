"""A hotel-booking agent whose booking tool waits for a human to review each call.

Source imitated: langchain-ai/langgraph, docs/docs/agents/human-in-the-loop.md, "Add
interrupts to any tool": a wrapper ``add_human_in_the_loop(tool)`` that sends an Agent
Inbox request (``{"action_request": {"action": name, "args": …}, "config": …,
"description": …}``) through ``interrupt([request])[0]`` and acts on the reviewer's
answer: ``{"type": "accept"}`` runs the tool, ``{"type": "edit", "args": {"args": …}}``
runs it with the reviewer's arguments, ``{"type": "response", "args": text}`` gives the
model the reviewer's words instead of the tool's result. The agent is
``create_react_agent`` compiled with an ``InMemorySaver`` checkpointer, as the page's.

Habits kept: a module-level ``ChatOpenAI``, the prompt as a module constant, a
module-level ``agent``.

Input: a case's ``message``. The reviewer's answers: the case's ``input.resume``.
"""

from collections.abc import Callable

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as create_tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent
from langgraph.prebuilt.interrupt import HumanInterrupt, HumanInterruptConfig
from langgraph.types import interrupt

SYSTEM_PROMPT = "You are a booking assistant. Book hotels with book_hotel; say what happened."

PRICES = {"mckittrick": 420, "ritz": 900, "hilton": 250}


def add_human_in_the_loop(
    tool: Callable | BaseTool, *, interrupt_config: HumanInterruptConfig = None
) -> BaseTool:
    """Wrap a tool so that a human reviews each call before it runs."""
    if not isinstance(tool, BaseTool):
        tool = create_tool(tool)
    if interrupt_config is None:
        interrupt_config = {"allow_accept": True, "allow_edit": True, "allow_respond": True}

    @create_tool(tool.name, description=tool.description, args_schema=tool.args_schema)
    def call_tool_with_interrupt(config: RunnableConfig, **tool_input):
        request: HumanInterrupt = {
            "action_request": {"action": tool.name, "args": tool_input},
            "config": interrupt_config,
            "description": "Please review the tool call",
        }
        response = interrupt([request])[0]
        if response["type"] == "accept":
            tool_response = tool.invoke(tool_input, config)
        elif response["type"] == "edit":
            tool_input = response["args"]["args"]
            tool_response = tool.invoke(tool_input, config)
        elif response["type"] == "response":
            tool_response = response["args"]
        else:
            raise ValueError(f"Unsupported interrupt response type: {response['type']}")
        return tool_response

    return call_tool_with_interrupt


def book_hotel(hotel_name: str) -> str:
    """Book a stay at a hotel."""
    price = PRICES.get(hotel_name.lower().removeprefix("the ").split()[0])
    return f"Successfully booked a stay at {hotel_name} (${price} a night)."


model = ChatOpenAI(model="gpt-4o-mini", temperature=0)
agent = create_react_agent(
    model=model,
    tools=[add_human_in_the_loop(book_hotel)],
    prompt=SYSTEM_PROMPT,
    checkpointer=InMemorySaver(),
)
