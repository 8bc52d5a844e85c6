"""The replay seal's bookkeeping, in-process: whose item a refusal fails (a thread charges
the item that started it; after that item ended, or from no item, the seal keeps it for
the run), a connection opened before the seal, and a thread outliving its seal. The
routes themselves are driven through the CLI in e2e/test_recording.py."""

from __future__ import annotations

import socket
import threading

import pytest

from eval_pipeline.core.running.agent import ItemScope, UsageLedger, item_scope
from eval_pipeline.core.running.seal import EscapedCall, sealed


@pytest.fixture
def listener():
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()


def connect(address: tuple[str, int], outcome: list[str]) -> None:
    try:
        socket.create_connection(address, timeout=2).close()
        outcome.append("connected")
    except EscapedCall:
        outcome.append("refused")


def test_a_thread_charges_the_item_that_started_it_and_after_it_the_run(listener):
    scope, outcome = ItemScope("c1", 0, 1, UsageLedger()), []
    with sealed([], "re-record") as seal:
        with item_scope(scope):
            joined = threading.Thread(target=connect, args=(listener, outcome))
            joined.start()
            joined.join()
            later = threading.Event()
            left = threading.Thread(target=lambda: later.wait(5) and connect(listener, outcome))
            left.start()
        later.set()
        left.join()
    assert outcome == ["refused", "refused"]
    assert [p.kind for p in scope.problems] == ["escaped call"]
    assert "from a thread the agent started" in scope.problems[0].message
    assert len(seal.strays) == 1 and "(after its item, c1#0, ended)" in seal.strays[0]


def test_a_connection_opened_before_the_seal_sends_nothing_during_it(listener):
    early = socket.create_connection(listener)
    with early, sealed([], "re-record") as seal, pytest.raises(EscapedCall) as refused:
        early.sendall(b"hello")
    assert "data on a connection to 127.0.0.1:" in str(refused.value)
    assert "opened before the replay" in seal.strays[0]  # (no item: the run's)


def test_an_agents_thread_stays_sealed_after_the_run_ours_do_not(listener):
    scope, outcome, go = ItemScope("c1", 0, 1, UsageLedger()), [], threading.Event()
    with sealed([], "re-record"):
        with item_scope(scope):
            agents = threading.Thread(target=lambda: go.wait(5) and connect(listener, outcome))
            agents.start()
        runners = threading.Thread(target=lambda: go.wait(5) and connect(listener, outcome))
        runners.start()
    go.set()
    agents.join()
    runners.join()
    assert sorted(outcome) == ["connected", "refused"]
