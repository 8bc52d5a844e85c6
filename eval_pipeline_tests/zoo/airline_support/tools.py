"""The airline's tools (a few of the tutorial's, over an in-memory table instead of its
SQLite travel database)."""

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool

TICKETS = {
    "3442 587242": {"ticket_no": "7240005432906569", "flight_no": "LX0112",
                    "departure": "CDG", "arrival": "BSL", "scheduled": "2024-04-30 12:09"},
    "9911 001122": {"ticket_no": "7240005432900001", "flight_no": "LX0338",
                    "departure": "ZRH", "arrival": "LHR", "scheduled": "2024-05-02 08:45"},
}  # fmt: skip
POLICIES = {
    "refund": "Refunds: tickets are refundable up to 24 hours before departure.",
    "baggage": "Baggage: one cabin bag of 8 kg; checked bags cost CHF 60.",
    "change": "Changes: a flight may be changed up to 3 hours before departure for CHF 50.",
}
CANCELLED: set[str] = set()


@tool
def fetch_user_flight_information(config: RunnableConfig) -> list[dict]:
    """Fetch all tickets for the user along with corresponding flight information."""
    passenger_id = config.get("configurable", {}).get("passenger_id", None)
    if not passenger_id:
        raise ValueError("No passenger ID configured.")
    ticket = TICKETS.get(passenger_id)
    return [ticket] if ticket else []


@tool
def lookup_policy(query: str) -> str:
    """Consult the company policies to check whether certain options are permitted."""
    hits = [text for key, text in POLICIES.items() if key in query.lower()]
    return "\n".join(hits) or "No policy found."


@tool
def cancel_ticket(ticket_no: str, *, config: RunnableConfig) -> str:
    """Cancel the user's ticket and remove it from the database."""
    passenger_id = config.get("configurable", {}).get("passenger_id", None)
    if not passenger_id:
        raise ValueError("No passenger ID configured.")
    owned = TICKETS.get(passenger_id, {}).get("ticket_no")
    if owned != ticket_no:
        return (
            f"Current signed-in passenger with ID {passenger_id} not the owner of ticket "
            f"{ticket_no}"
        )
    return "Ticket successfully cancelled."
