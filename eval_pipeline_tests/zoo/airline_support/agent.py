"""An airline's customer-support assistant, written the way a company writes one.

Source imitated: CopilotKit/CopilotKit, examples/langgraph/customer-support/agent-py/
tutorial_customer_support/ (agent.py, tools.py, utilities.py), itself part 1 of
LangGraph's "Build a Customer Support Bot" tutorial (Swiss Airlines): a ``State`` with
``user_info``; an ``Assistant`` class around a runnable that reads ``passenger_id`` from
the run's ``configurable`` and re-prompts the model when it answers with nothing; a
``ChatPromptTemplate`` whose system message carries the current user and the current
time (``.partial(time=datetime.now)``); tools in their own module, reading the passenger
from ``config``; ``create_tool_node_with_fallback`` (tool errors go back to the model);
``tools_condition``; ``builder.compile(checkpointer=MemorySaver())`` at module level.

What the evaluation has to cope with: the time in every request, the passenger in the
run's configuration (``agent.configurable`` in the project file), a checkpointer shared by
the module.

Input: a case's ``message``. Answer: the last AI message.
"""

from datetime import datetime
from typing import Annotated

from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import AnyMessage, add_messages
from langgraph.prebuilt import tools_condition
from typing_extensions import TypedDict

from .tools import cancel_ticket, fetch_user_flight_information, lookup_policy
from .utilities import create_tool_node_with_fallback


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    user_info: str


class Assistant:
    def __init__(self, runnable: Runnable):
        self.runnable = runnable

    def __call__(self, state: State, config: RunnableConfig):
        while True:
            configuration = config.get("configurable", {})
            passenger_id = configuration.get("passenger_id", None)
            state = {**state, "user_info": passenger_id}
            result = self.runnable.invoke(state)
            # If the LLM happens to return an empty response, re-prompt it for a real one.
            if not result.tool_calls and (
                not result.content
                or (isinstance(result.content, list) and not result.content[0].get("text"))
            ):
                messages = state["messages"] + [("user", "Respond with a real output.")]
                state = {**state, "messages": messages}
            else:
                break
        return {"messages": result}


llm = ChatOpenAI(model="gpt-4o-mini", temperature=1)

PRIMARY_ASSISTANT_PROMPT = (
    "You are a helpful customer support assistant for Swiss Airlines. "
    " Use the provided tools to search for flights, company policies, and other information"
    " to assist the user's queries. "
)

primary_assistant_prompt = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            PRIMARY_ASSISTANT_PROMPT
            + "\n\nCurrent user:\n<User>\n{user_info}\n</User>"
            + "\nCurrent time: {time}.",
        ),
        ("placeholder", "{messages}"),
    ]
).partial(time=datetime.now)

part_1_tools = [fetch_user_flight_information, lookup_policy, cancel_ticket]
part_1_assistant_runnable = primary_assistant_prompt | llm.bind_tools(part_1_tools)

builder = StateGraph(State)
builder.add_node("assistant", Assistant(part_1_assistant_runnable))
builder.add_node("tools", create_tool_node_with_fallback(part_1_tools))
builder.add_edge(START, "assistant")
builder.add_conditional_edges("assistant", tools_condition)
builder.add_edge("tools", "assistant")

memory = MemorySaver()
part_1_graph = builder.compile(checkpointer=memory)
