"""A support desk on langgraph-supervisor: a supervisor handing off to a billing and a
shipping agent, each a prebuilt ReAct agent with its tools.

Source imitated: langchain-ai/langgraph-supervisor-py, README.md, "Quickstart" (as shipped
in the PyPI package langgraph-supervisor 0.0.31): a module-level ``model =
ChatOpenAI(...)``, plain functions as tools, ``create_react_agent(model=…, tools=[…],
name=…, prompt=…)`` per specialist, ``create_supervisor([…], model=model, prompt=…)`` and
``workflow.compile()``.

Habits kept: the model at module level (the OpenAI SDK reads OPENAI_BASE_URL and
OPENAI_API_KEY), prompts as module constants, a factory ``build(ctx=None)`` that compiles
the workflow; the refund tool waits for a supervisor's approval with LangGraph's
``interrupt()`` (the human-in-the-loop page of the LangGraph docs, "Review tool calls").
What replay must survive comes from the library, not from this file:
``create_handoff_back_messages`` gives each handoff-back a fresh ``uuid4()`` tool-call id
(langgraph_supervisor/handoff.py), and ``create_supervisor`` builds the handoff tools from
a ``set`` of agent names (supervisor.py), whose order follows the hash seed.

Input: a case's ``message`` (as a user message). Answer: the last AI message.
"""

from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent
from langgraph.types import interrupt
from langgraph_supervisor import create_supervisor

model = ChatOpenAI(model="gpt-4o-mini", temperature=0)

SUPERVISOR_PROMPT = (
    "You are the supervisor of a support desk. Hand billing questions (invoices, refunds, "
    "charges) to billing_agent and delivery questions (tracking, delivery dates) to "
    "shipping_agent."
)
BILLING_PROMPT = "You are the billing agent. Look the invoice up before you answer."
SHIPPING_PROMPT = "You are the shipping agent. Track the package before you answer."

INVOICES = {"A100": "$42.00, paid", "A200": "$17.50, due 1 December"}
PARCELS = {"A100": "delivered on 20 November", "A200": "in transit, due 28 November"}


def get_invoice(order_id: str) -> str:
    """The invoice of an order: amount and status."""
    return INVOICES.get(order_id.upper(), "no such order")


def refund_status(order_id: str) -> str:
    """Whether a refund was issued for an order."""
    return "no refund issued" if order_id.upper() in INVOICES else "no such order"


def issue_refund(order_id: str) -> str:
    """Refund an order in full. A supervisor approves every refund."""
    amount = INVOICES.get(order_id.upper(), "no such order").split(",")[0]
    decision = interrupt({"action": "issue_refund", "order_id": order_id, "amount": amount})
    if decision.get("approved"):
        return f"refund of {amount} issued"
    return "refund declined by a supervisor"


def track_package(order_id: str) -> str:
    """Where an order's package is."""
    return PARCELS.get(order_id.upper(), "no such order")


def delivery_estimate(order_id: str) -> str:
    """When an order will arrive."""
    return PARCELS.get(order_id.upper(), "no such order")


def build(ctx=None):
    billing = create_react_agent(
        model=model,
        tools=[get_invoice, refund_status, issue_refund],
        name="billing_agent",
        prompt=BILLING_PROMPT,
    )
    shipping = create_react_agent(
        model=model,
        tools=[track_package, delivery_estimate],
        name="shipping_agent",
        prompt=SHIPPING_PROMPT,
    )
    # The supervisor's prompt from eval-pipeline's registry when a suite declares one.
    prompt = ctx.system_prompt() if ctx is not None and ctx.prompt_version else SUPERVISOR_PROMPT
    workflow = create_supervisor([billing, shipping], model=model, prompt=prompt)
    return workflow.compile()
