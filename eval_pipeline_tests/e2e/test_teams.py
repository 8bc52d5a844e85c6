"""The multi-agent and human-in-the-loop zoo (issue 36, item 6): a human-approval agent
(approve, edit, deny, and a case that expects the wait), a langgraph-swarm pair, a ReAct
loop with parallel tool calls and an airline's support assistant written the way a company
writes one (eval_pipeline_tests/teams.py; each file under zoo/ names its source).

Each goes through the same runs from a team's directory outside this repository, each in
a fresh process with ``PYTHONHASHSEED=random``: a live run that passes; ``--record``,
UNCHANGED against the live run although every tool-call id was drawn afresh; ``--replay``
twice with the model server up and untouched and then with no endpoint at all; a worse
prompt that FAILs against the live run; and the stale recording, which misses (exit 2,
never a pass)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.model_server import LocalOpenAIServer
from eval_pipeline_tests.teams import TEAMS, Team, TeamShell


class TeamRepo(TeamShell):
    def __init__(self, root: Path, team: Team, model: LocalOpenAIServer):
        super().__init__(root, model)
        self.team = team

    def run(self, *args: str, endpoint: bool = True, code: int = 0) -> dict:
        done = self.cli("run", "--suite", self.team.package, "--json", "out.json", *args,
                        endpoint=endpoint)  # fmt: skip
        assert done.returncode == code, done.stdout + done.stderr
        self.last = done
        return json.loads((self.root / "out.json").read_text())

    def outputs(self, run_id: str) -> dict[str, dict]:
        store = ResultsStore(f"sqlite:///{self.root / '.eval_home' / 'results.sqlite'}")
        return {o.item_id: o.output for o in store.read_outputs(run_id)}


@pytest.fixture(params=sorted(TEAMS))
def repo(request, tmp_path):
    team = TEAMS[request.param]
    root = tmp_path / f"{team.package}-repo"
    root.mkdir()
    team.write(root)
    with LocalOpenAIServer(chat_model=team.model, models=["gpt-4o-mini"]) as model:
        yield TeamRepo(root, team, model)


def test_a_zoo_agent_runs_records_replays_and_fails_when_worse(repo):
    live = repo.run()
    assert live["verdict"] == "PASS", repo.last.stdout
    assert live["summary"]["metrics"] == {"completeness": 1.0, "correctness": 1.0}
    CHECKS[repo.team.package](repo.outputs(live["run"]["run_id"]), live)

    recorded = repo.run("--record")
    assert "UNCHANGED" in repo.last.stdout, repo.last.stdout.strip().splitlines()[-1]
    served = repo.model.requests
    replayed = repo.run("--replay")  # the server up, and not asked
    assert repo.model.requests == served
    assert replayed["summary"]["metrics"] == recorded["summary"]["metrics"]
    again = repo.run("--replay", endpoint=False)  # a fresh process, no endpoint at all
    assert again["summary"]["metrics"] == recorded["summary"]["metrics"]
    assert [i["status"] for i in again["items"]] == [i["status"] for i in live["items"]]

    repo.team.make_worse(repo.root)
    worse = repo.run("--baseline-run", live["run"]["run_id"], code=1)
    assert worse["verdict"] == "FAIL", repo.last.stdout
    assert repo.last.stdout.strip().splitlines()[-1].startswith("VERDICT: FAIL")
    stale = repo.cli("run", "--suite", repo.team.package, "--replay", endpoint=False)
    assert stale.returncode == 2, stale.stdout + stale.stderr
    assert "replay miss" in stale.stdout.strip().splitlines()[-1]


def _approval(outputs: dict[str, dict], result: dict) -> None:
    """Approve, edit and deny resume the graph with the reviewer's answer; the case that
    expects the wait ends paused, its interrupt in the output and ``paused`` its status."""
    approved = outputs["approve-mckittrick"]
    assert approved["paused"] is False and approved["interrupts"] == [{
        "name": "book_hotel",
        "value": [{"action_request": {"action": "book_hotel",
                                      "args": {"hotel_name": "McKittrick"}},
                   "config": {"allow_accept": True, "allow_edit": True, "allow_respond": True},
                   "description": "Please review the tool call"}],
        "answer": [{"type": "accept"}],
    }]  # fmt: skip
    assert "Hilton ($250" in outputs["edit-ritz"]["response"]
    assert outputs["deny-ritz"]["response"] == "I did not book it: Too expensive: do not book it."
    waiting = outputs["waits-hilton"]
    assert waiting["paused"] is True and "answer" not in waiting["interrupts"][0]
    assert waiting["response"] == ""
    status = {i["item_id"]: i["status"] for i in result["items"]}
    assert status == {"approve-mckittrick": "finished", "edit-ritz": "finished",
                      "deny-ritz": "finished", "waits-hilton": "paused"}  # fmt: skip
    assert result["summary"]["n_paused"] == 1


def _swarm(outputs: dict[str, dict], result: dict) -> None:
    """The prebuilt handoff and Bob's own ``ask_alice`` (a tool returning
    ``Command(goto="Alice", graph=Command.PARENT)``) are handoffs, not tools; the cases are
    written both ways, with and without the handoffs in ``expected_tools``."""
    calls = [(c["name"], c["kind"], c["agent"]) for c in outputs["pirate-sum"]["tool_calls"]]
    assert calls == [("transfer_to_bob", "handoff", "Alice"), ("ask_alice", "handoff", "Bob"),
                     ("add", "tool", "Alice")]  # fmt: skip
    assert outputs["pirate-sum"]["tools_called"] == ["add"]
    assert outputs["pirate-hello"]["answered_by"] == "Bob"
    assert outputs["sum-5-7"]["answered_by"] == "Alice"
    # Written with its handoffs in expected_tools, a case is matched against the handoffs
    # made (before: 0.33 and 0.0, "missing ['transfer_to_bob', 'ask_alice']").
    assert outputs["handoff-sum"]["tools_called"] == ["add"]
    scores = {i["item_id"]: i["scores"]["correctness"] for i in result["items"]}
    assert scores["handoff-sum"] == scores["handoff-hello"] == 1.0


def _parallel(outputs: dict[str, dict], result: dict) -> None:
    """Three calls asked for in one message: each listed once, in the order asked."""
    calls = outputs["three-cities"]["tool_calls"]
    assert [c["args"]["location"] for c in calls] == ["SF", "OSLO", "LIMA"]
    assert len({c["id"] for c in calls}) == 3
    messages = outputs["three-cities"]["messages"]
    assert len(next(m for m in messages if m.get("tool_calls"))["tool_calls"]) == 3


def _airline(outputs: dict[str, dict], result: dict) -> None:
    """The passenger comes from ``agent.configurable``; the time in every system message
    changes between runs and does not stop replay."""
    assert "LX0112" in outputs["flight-mine"]["response"]
    assert outputs["cancel-mine"]["response"] == "Ticket successfully cancelled."


CHECKS = {"human_approval": _approval, "swarm_pair": _swarm, "parallel_tools": _parallel,
          "airline_support": _airline}  # fmt: skip
