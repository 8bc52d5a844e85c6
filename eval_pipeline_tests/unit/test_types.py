"""Types that say what they hold: a verdict is the ``Verdict`` enum from the result to the
store and back (an unknown stored string is a clear error), and an agent's optional
abilities are protocols read in one place (core/running/agent.py)."""

import asyncio

import pytest
from sqlalchemy import text
from typing_extensions import get_protocol_members

from eval_pipeline.core.errors import ServiceError
from eval_pipeline.core.running import agent as agents
from eval_pipeline.core.store.records import RunRecord, RunStatus, Verdict, VerdictRecord
from eval_pipeline.core.store.results_store import ResultsStore


def run_record(run_id: str) -> RunRecord:
    return RunRecord(run_id=run_id, suite="s", prompt_name="p", prompt_version="1",
                     prompt_hash="h", dataset_version="d", model="m", tier="full")  # fmt: skip


@pytest.fixture
def store(tmp_path):
    with ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}") as s:
        yield s


def test_a_stored_verdict_reads_back_as_the_enum(store):
    store.create_run(run_record("r1"))
    store.settle_run("r1", RunStatus.COMPLETE, VerdictRecord("r1", Verdict.UNDECIDED, "why"))
    [(_, said)] = store.latest_verdicts()
    assert said.verdict is Verdict.UNDECIDED
    with store.engine.connect() as conn:  # stored as its value, the string
        assert conn.execute(text("SELECT verdict FROM verdicts")).scalar() == "UNDECIDED"


def test_an_unknown_stored_verdict_is_a_clear_error(store):
    store.create_run(run_record("r1"))
    store.settle_run("r1", RunStatus.COMPLETE, VerdictRecord("r1", Verdict.PASS, ""))
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE verdicts SET verdict = 'PASSED'"))
    with pytest.raises(ServiceError, match=r"run r1: the stored verdict 'PASSED' is none of "
                                           r"PASS, FAIL, UNDECIDED, ERROR"):  # fmt: skip
        store.latest_verdicts()
    assert ServiceError.exit_code == 2


def test_a_verdict_given_as_its_string_becomes_the_enum():
    assert VerdictRecord("r1", "FAIL", "worse").verdict is Verdict.FAIL  # type: ignore[arg-type]


class Bare:
    """An agent offering only ``run``."""

    async def run(self, case, *, repeat, callbacks=()):
        return agents.AgentResult({})


class Able(Bare):
    """One offering every optional ability."""

    def __init__(self):
        self.closed, self.recorded = False, []

    @property
    def prompt_read(self) -> bool:
        return False

    @property
    def service_url(self) -> str:
        return "http://agent.test/run"

    async def aclose(self) -> None:
        self.closed = True

    async def reused(self, case, repeat, output) -> None:
        self.recorded.append((case, repeat))

    @property
    def offered_tools(self) -> frozenset[str]:
        return frozenset({"get_invoice", "transfer_to_billing_agent"})


def test_an_agent_offering_only_run_gets_the_defaults():
    bare = Bare()
    assert agents.prompt_read(bare) is True  # taken at its word
    assert agents.service_url(bare) is None
    asyncio.run(agents.close(bare))  # nothing to release: no error
    assert not isinstance(bare, agents.RecordsReused)
    assert agents.offered_tools(bare) is None  # it cannot say: nothing is concluded


def test_an_agent_offering_more_is_read_through_its_protocols():
    able = Able()
    assert isinstance(able, agents.ReadsPrompt | agents.CallsService | agents.Closeable)
    assert isinstance(able, agents.RecordsReused)
    assert agents.prompt_read(able) is False
    assert agents.service_url(able) == "http://agent.test/run"
    assert agents.offered_tools(able) == {"get_invoice", "transfer_to_billing_agent"}
    asyncio.run(agents.close(able))
    assert able.closed


def offers(cls: type, protocol: type) -> bool:
    """Whether instances of ``cls`` have every member of ``protocol`` (issubclass does not
    take protocols with properties)."""
    return all(hasattr(cls, name) for name in get_protocol_members(protocol))


def test_the_adapters_declare_what_they_offer():
    from eval_pipeline.agents.adapters.graph import GraphAgent
    from eval_pipeline.agents.adapters.http import HttpAgent
    from eval_pipeline.agents.context import ContextAgent
    from eval_pipeline.integrations.langfuse_tracing import TracedAgent

    for protocol in (agents.CallsService, agents.ReadsPrompt, agents.Closeable):
        assert offers(HttpAgent, protocol)
    assert offers(ContextAgent, agents.ReadsPrompt)
    assert not offers(ContextAgent, agents.CallsService)
    assert offers(TracedAgent, agents.RecordsReused)
    assert offers(GraphAgent, agents.OffersTools) and offers(TracedAgent, agents.OffersTools)
    assert not offers(HttpAgent, agents.OffersTools)


def test_a_bad_setting_of_the_code_location_is_a_configuration_error(monkeypatch):
    """Bad settings read when Dagster loads the code location are ``ConfigurationError``s
    (exit 2, the message as it was), no bare ValueErrors."""
    from eval_pipeline.core.errors import ConfigurationError, ExitCode
    from eval_pipeline.defs.evaluation.execution import executor_name
    from eval_pipeline.defs.partitions import EvalPartition
    from eval_pipeline.defs.resources import _number_env

    monkeypatch.setenv("EVAL_EXECUTOR", "ray")
    with pytest.raises(ConfigurationError, match="EVAL_EXECUTOR='ray': use one of local, k8s"):
        executor_name()
    monkeypatch.setenv("EVAL_LLM_MAX_TOKENS", "many")
    with pytest.raises(ConfigurationError, match="EVAL_LLM_MAX_TOKENS='many': expected a int"):
        _number_env("EVAL_LLM_MAX_TOKENS", int)
    with pytest.raises(ConfigurationError, match="not an evaluation partition: 'support'"):
        EvalPartition.parse("support")
    assert ConfigurationError.exit_code is ExitCode.ERROR
