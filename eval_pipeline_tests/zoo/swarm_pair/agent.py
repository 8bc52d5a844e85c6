"""Two agents in a swarm: Alice adds numbers, Bob speaks like a pirate; each hands the
conversation to the other.

Source imitated: langchain-ai/langgraph-swarm-py, README.md (as shipped in the PyPI
package langgraph-swarm 0.1.0): "Quickstart" (``create_agent(model, tools=[add,
create_handoff_tool(agent_name="Bob", …)], system_prompt=…, name="Alice")``, Bob likewise,
``create_swarm([alice, bob], default_active_agent="Alice")``, ``compile(checkpointer=
InMemorySaver())``) and "Customizing handoff tools" (a tool of its own name that returns
``Command(goto=agent_name, graph=Command.PARENT, update=…)``): Bob hands back to Alice
with such a tool, ``ask_alice``.

Habits kept: a module-level ``ChatOpenAI``, prompts as module constants, a module-level
``app``.

Input: a case's ``message``. Answer: the last AI message (``answered_by``: who gave it).
"""

from typing import Annotated

from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import InjectedState
from langgraph.types import Command
from langgraph_swarm import create_handoff_tool, create_swarm

model = ChatOpenAI(model="gpt-4o-mini", temperature=0)

ALICE_PROMPT = "You are Alice, an addition expert. Add with the add tool."
BOB_PROMPT = "You are Bob, you speak like a pirate. Hand sums to Alice."


def add(a: int, b: int) -> int:
    """Add two numbers"""
    return a + b


def create_custom_handoff_tool(*, agent_name: str, name: str, description: str) -> BaseTool:
    @tool(name, description=description)
    def handoff_to_agent(
        task_description: Annotated[str, "What the next agent should do"],
        state: Annotated[dict, InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ):
        tool_message = ToolMessage(
            content=f"Successfully transferred to {agent_name}",
            name=name,
            tool_call_id=tool_call_id,
        )
        return Command(
            goto=agent_name,
            graph=Command.PARENT,
            update={"messages": state["messages"] + [tool_message], "active_agent": agent_name},
        )

    return handoff_to_agent


alice = create_agent(
    model,
    tools=[add, create_handoff_tool(agent_name="Bob", description="Transfer to Bob")],
    system_prompt=ALICE_PROMPT,
    name="Alice",
)
bob = create_agent(
    model,
    tools=[
        create_custom_handoff_tool(
            agent_name="Alice", name="ask_alice", description="Ask Alice to do a sum"
        )
    ],
    system_prompt=BOB_PROMPT,
    name="Bob",
)

checkpointer = InMemorySaver()
workflow = create_swarm([alice, bob], default_active_agent="Alice")
app = workflow.compile(checkpointer=checkpointer)
