"""Real model servers are not OpenAI: a double with llama.cpp's measured behaviour (tools
only with tool_choice, a 500 on a null assistant turn, one request at a time, answers that
run on without max_tokens) and the settings that make an evaluation work against it."""

from __future__ import annotations

import pytest

from eval_pipeline.api import evaluate
from eval_pipeline.core.running.runner import RunnerConfig, run_agent_sync
from eval_pipeline.core.suites.cases import select_tier
from eval_pipeline.llm.factory import adapt_payload
from eval_pipeline.llm.model_settings import LLMSettings, SettingsError
from eval_pipeline_tests.helpers import PROJECT, agent, clean_cli_env, suite
from eval_pipeline_tests.model_server import LLAMA_CPP, LocalOpenAIServer, ServerQuirks


@pytest.fixture
def llama(tmp_path, monkeypatch):
    """The drive-thru suite against a llama.cpp-like server, on embedded defaults."""
    clean_cli_env(monkeypatch, tmp_path / "home")
    with LocalOpenAIServer(quirks=LLAMA_CPP) as server:
        monkeypatch.setenv("EVAL_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("EVAL_LLM_API_KEY", "none")
        monkeypatch.setenv("EVAL_LLM_MODEL", "offline")
        yield server, monkeypatch


def smoke(**options):
    return evaluate("drive_thru", project=PROJECT, tier="smoke", cache="off", **options)


def test_without_tool_choice_no_tool_is_called_and_the_llama_cpp_preset_fixes_it(llama):
    server, env = llama
    plain = smoke()
    assert plain.summary.metrics["tool_call_accuracy"] < 0.5  # it never saw the tools
    assert plain.summary.tokens.output >= 2400 * plain.summary.n_items  # and ran on
    # Before, the report said only "min_mean_scores": nothing hinted that no tool was ever
    # called. Now the verdict says so and where to look.
    offered = plain.summary.calls_with_tools
    assert offered >= plain.summary.n_items and plain.summary.tool_call_answers == 0
    assert plain.hint == (f"0 of {offered} model calls with tools returned a tool call: the "
                          "endpoint may ignore tools; see `eval-pipeline doctor` / "
                          "EVAL_LLM_COMPAT")  # fmt: skip
    assert plain.hint in plain.notes
    from eval_pipeline.cli.report import verdict_line

    assert verdict_line(plain).endswith(f"; note: {plain.hint}")
    env.setenv("EVAL_LLM_COMPAT", "llama.cpp")
    fixed = smoke()
    assert fixed.hint is None and fixed.summary.tool_call_answers > 0
    assert fixed.summary.metrics == {"no_hallucinated_items": 1.0, "order_correctness": 1.0,
                                     "tool_call_accuracy": 1.0}  # fmt: skip
    assert fixed.summary.n_errors == 0
    params = fixed.run.model_params
    assert (params["tool_choice"], params["max_tokens"], params["max_tokens_field"],
            params["tool_turn_content"]) == ("auto", 512, "max_tokens", "empty")  # fmt: skip
    assert server.app.state.stats.get("rejected_null_content", 0) == 0


def test_an_assistant_turn_with_null_content_is_refused_unless_sent_empty(llama):
    server, env = llama
    env.setenv("EVAL_LLM_TOOL_CHOICE", "auto")
    refused = smoke()
    kinds = {o.error_kind for o in refused.outputs if o.error}
    assert kinds == {"HTTP 500 internal_server_error"}
    assert all("'content'" in o.error for o in refused.outputs if o.error)
    # a server refusing requests is not a verdict on the agent
    assert refused.verdict == "ERROR" and "outside the agent" in refused.errors[0]
    # each refused call was sent 1 + max_retries times, and the runner sent it no more
    rejected = server.app.state.stats["rejected_null_content"]
    assert rejected == 3 * len([o for o in refused.outputs if o.error])
    env.setenv("EVAL_LLM_TOOL_TURN_CONTENT", "empty")
    assert smoke().summary.n_errors == 0


def test_an_answer_cap_the_server_ignores_is_sent_under_the_name_it_reads(llama):
    _, env = llama
    env.setenv("EVAL_LLM_TOOL_CHOICE", "auto")
    env.setenv("EVAL_LLM_TOOL_TURN_CONTENT", "empty")
    env.setenv("EVAL_LLM_MAX_TOKENS", "64")
    ignored = smoke()  # sent as max_completion_tokens, which llama.cpp does not read
    assert ignored.summary.tokens.output >= 2400 * ignored.summary.n_items
    env.setenv("EVAL_LLM_MAX_TOKENS_FIELD", "max_tokens")
    capped = smoke()
    assert 0 < capped.summary.tokens.output <= 64 * sum(o.usage["offline"]["calls"]
                                                         for o in capped.outputs)  # fmt: skip


def test_a_failing_call_is_sent_at_most_one_plus_max_retries_times():
    """A single-slot server slower than the request timeout: the client tries the call
    three times (max_retries 2) and the runner does not start the item again; the server,
    which computes abandoned requests to the end, finishes exactly those three. (Before,
    the SDK, LangGraph and the runner multiplied to 18 requests.)"""
    slow = ServerQuirks(single_slot=True)
    case = select_tier(suite("drive_thru").load_cases(), "smoke")[:1]
    with LocalOpenAIServer(latency_s=0.4, quirks=slow) as server:
        settings = LLMSettings.create(base_url=server.base_url, api_key="x", model="offline",
                                      timeout_s=0.25, max_retries=2)  # fmt: skip
        (out,) = run_agent_sync(agent("drive_thru", 1, settings), case,
                                RunnerConfig(timeout_s=30))  # fmt: skip
        assert server.requests == 3
    assert out.error_kind == "timeout" and out.attempts == 1


def test_an_item_timeout_is_not_retried_and_its_tokens_are_kept():
    """The item's first call is answered, its next call outlives the item timeout: one
    attempt, its tokens counted although the item failed."""
    slow_second = ServerQuirks(single_slot=False)
    case = select_tier(suite("drive_thru").load_cases(), "smoke")[:1]

    def fault(body):
        return "hang" if len(body["messages"]) > 2 else None

    with LocalOpenAIServer(fault=fault, quirks=slow_second) as server:
        settings = LLMSettings.create(base_url=server.base_url, api_key="x", model="offline",
                                      timeout_s=30, max_retries=0)  # fmt: skip
        (out,) = run_agent_sync(agent("drive_thru", 1, settings), case,
                                RunnerConfig(timeout_s=1.0))  # fmt: skip
        assert server.requests == 2
    assert out.error_kind == "timeout" and "per-item timeout" in out.error
    assert out.attempts == 1 and out.input_tokens > 0 and out.usage["offline"]["calls"] == 1


def test_the_request_timeout_fits_the_item_timeout():
    derived = LLMSettings.create(max_retries=2).for_item_timeout(120)
    assert derived.timeout_s == 40 and not derived.notes
    explicit = LLMSettings.create(timeout_s=60, max_retries=2).for_item_timeout(120)
    assert explicit.timeout_s == 60 and "cut at the item timeout" in explicit.notes[0]


def test_payload_adaptation():
    payload = {"tools": [{"type": "function"}], "max_completion_tokens": 9,
               "messages": [{"role": "assistant", "content": None, "tool_calls": [{}]},
                            {"role": "user", "content": None}]}  # fmt: skip
    adapted = adapt_payload(dict(payload), "auto", "max_tokens", "empty")
    assert adapted["tool_choice"] == "auto" and adapted["max_tokens"] == 9
    assert "max_completion_tokens" not in adapted
    assert [m["content"] for m in adapted["messages"]] == ["", None]  # assistant turns only
    untouched = adapt_payload({"messages": []}, "auto", "max_completion_tokens", "null")
    assert "tool_choice" not in untouched  # no tools offered, no tool_choice


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [("EVAL_LLM_COMPAT", "lmstudio", "use one of openai, llama.cpp, vllm, ollama"),
     ("EVAL_LLM_MAX_TOKENS", "lots", "EVAL_LLM_MAX_TOKENS='lots': expected a int"),
     ("EVAL_LLM_TOOL_CHOICE", "always", "use one of auto, required, none")],
)  # fmt: skip
def test_bad_settings_name_the_variable(name, value, message):
    with pytest.raises(SettingsError, match=message):
        LLMSettings.from_env({name: value})


def test_the_report_shows_what_was_sent_and_what_has_no_price(tmp_path, monkeypatch):
    """An explicit temperature overrides the prompt's 0.0 and the report says so; the header
    carries the effective parameters; a model with no price is named, not costed at $0."""
    from click.testing import CliRunner

    from eval_pipeline.cli import main

    clean_cli_env(monkeypatch, tmp_path / "home")
    with LocalOpenAIServer(models=("my-local-model",)) as server:
        monkeypatch.setenv("EVAL_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("EVAL_LLM_API_KEY", "none")
        monkeypatch.setenv("EVAL_LLM_MODEL", "my-local-model")
        monkeypatch.setenv("EVAL_LLM_TEMPERATURE", "0.7")
        monkeypatch.setenv("EVAL_LLM_MAX_TOKENS", "300")
        ran = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--tier", "smoke",
                                        "--cache", "off"], terminal_width=200)  # fmt: skip
    text = " ".join(ran.output.split())
    assert ran.exit_code in (0, 1), ran.output
    assert "model=my-local-model" in text and "temperature=0.7" in text
    assert "max_tokens=300" in text and "timeout_s=40" in text  # 120 s item / (1 + 2 tries)
    override = "temperature 0.7 (EVAL_LLM_TEMPERATURE) overrides the prompt's config.temperature 0"
    assert override in text
    assert "without the models that have no price (my-local-model" in text
