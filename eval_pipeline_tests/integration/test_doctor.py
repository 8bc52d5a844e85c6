"""`eval-pipeline doctor`: every check passes on the embedded defaults, and each broken
dependency is named with a fix, without printing secrets."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from eval_pipeline.cli import main
from eval_pipeline_tests.helpers import ROOT, clean_cli_env, copy_project
from eval_pipeline_tests.langfuse_server import LangfuseTestServer
from eval_pipeline_tests.model_server import LocalOpenAIServer
from eval_pipeline_tests.pg import dagster_pg_env, fresh_database

PLANTED = "sk-planted-doctor-3b9e1f"


@pytest.fixture
def home(tmp_path, monkeypatch):
    from eval_pipeline.defs.instance import write_local_instance

    home = clean_cli_env(monkeypatch, tmp_path / "home")
    write_local_instance(home / "dagster")
    monkeypatch.setenv("COLUMNS", "250")  # one table row per line
    return home


def doctor() -> tuple[int, str]:
    result = CliRunner().invoke(main, ["doctor"], catch_exceptions=False, terminal_width=240)
    return result.exit_code, result.output


def row(output: str, check: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(f"│ {check} "))


def test_embedded_defaults_are_healthy(home):
    code, out = doctor()
    assert code == 0, out
    for check in ("configuration", "suites", "prompts", "model endpoint", "langfuse",
                  "results store", "dagster instance"):  # fmt: skip
        assert "ok" in row(out, check), check
    assert "drive_thru 47" in out and "offline model" in out
    # each example's margin is one its cases decide with a case that flips (no warning)
    said = " ".join(row(out, "suites").split("│")[3].split())
    assert "drive_thru 47 (the finest margin they can decide: 0.072; with a case that " \
        "flips each way: 0.15)" in said and "warning" not in said, said


@pytest.mark.parametrize(("margin", "warning"), [
    (0.02, "drive_thru's margin 0.02 needs 174 paired cases to be called not worse by "
           "--gate sequential, it has 47: set a margin of at least 0.15 or grow the suite to "
           "348 cases (docs/gate.md#choosing-a-margin)"),
    (0.1, "drive_thru's margin 0.1 is decided by its 47 cases only when every pair is tied "
          "(34 needed): a case or two that flip leave it UNDECIDED; set a margin of at least "
          "0.15 or grow the suite to 68 cases"),
])  # fmt: skip
def test_a_margin_finer_than_the_suite_gates_is_a_warning(home, monkeypatch, tmp_path, margin,
                                                          warning):  # fmt: skip
    """A margin out of the gate's reach on the suite's cases, or within it only when every
    pair ties (a copy of the production prompt that differs on a case or two ends
    UNDECIDED): doctor warns, with the margin to set or the cases to grow to."""
    project = copy_project(tmp_path)
    thresholds = project.parent / "datasets" / "drive_thru" / "thresholds.yaml"
    text = thresholds.read_text()
    thresholds.write_text(text.replace("  margin: 0.15 ", f"  margin: {margin} ", 1))
    monkeypatch.setenv("EVAL_PROJECT", str(project))
    from eval_pipeline.cli.doctor import check_suites

    found = check_suites()
    assert found.ok, found  # a warning, not a failure
    assert f"; warning: {warning}" in found.detail, found.detail


def test_a_margin_the_suite_cannot_decide_is_said():
    """Nothing moved, and still the sequential gate needs this many pairs to say "not
    worse": a suite with fewer cases can only pass as UNCHANGED."""
    from eval_pipeline.core.scoring.sequential import decide, pairs_to_clear

    needed = pairs_to_clear(0.1, 0.05)
    assert needed is not None and 20 < needed < 200
    assert decide({"m": [0.0] * needed}, margin=0.1, alpha=0.05)["m"].decided
    assert not decide({"m": [0.0] * (needed - 1)}, margin=0.1, alpha=0.05)["m"].decided
    assert pairs_to_clear(0.0005, 0.05) is None  # out of reach within 4,000 pairs


def test_a_reachable_model_endpoint_is_checked_for_the_model(home, monkeypatch):
    with LocalOpenAIServer() as server:
        monkeypatch.setenv("EVAL_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("EVAL_LLM_API_KEY", PLANTED)
        monkeypatch.setenv("EVAL_LLM_MODEL", "gpt-4o-mini")
        code, out = doctor()
        assert code == 0 and "gpt-4o-mini ok" in out, out
        monkeypatch.setenv("EVAL_LLM_MODEL", "gpt-9")
        code, out = doctor()
    assert code == 1 and "FAIL" in row(out, "model endpoint")
    assert "set EVAL_LLM_MODEL to a listed model" in out and PLANTED not in out


def test_unreachable_endpoint_and_store_are_named_with_fixes(home, monkeypatch):
    monkeypatch.setenv("EVAL_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("EVAL_LLM_API_KEY", PLANTED)
    monkeypatch.setenv("EVAL_RESULTS_URL", "postgresql://eval:hunter2pw@127.0.0.1:9/evals")
    code, out = doctor()
    assert code == 1
    assert "FAIL" in row(out, "model endpoint") and "is reachable" in out
    assert "FAIL" in row(out, "results store") and "EVAL_RESULTS_URL" in out
    assert PLANTED not in out and "hunter2pw" not in out
    assert "2 problem(s): model endpoint, results store" in out
    assert "skip" in row(out, "model probe")  # an unreachable server is not probed


def test_a_broken_dataset_names_the_file(home, monkeypatch, tmp_path):
    project = copy_project(tmp_path)
    cases = project.parent / "datasets" / "order_management" / "cases.yaml"
    cases.write_text("cases: [ {id: broken\n")
    monkeypatch.setenv("EVAL_PROJECT", str(project))
    code, out = doctor()
    assert code == 1 and "FAIL" in row(out, "suites")
    assert "order_management" in out


def test_langfuse_with_wrong_keys_fails_without_showing_the_secret(home, monkeypatch):
    with LangfuseTestServer() as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("LANGFUSE_SECRET_KEY", PLANTED)
        code, out = doctor()
    assert code == 1 and "FAIL" in row(out, "langfuse") and PLANTED not in out
    assert "LANGFUSE_PUBLIC_KEY" in out


def test_a_missing_dagster_home_is_reported(home, monkeypatch, tmp_path):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "nowhere"))
    code, out = doctor()
    assert code == 1 and "FAIL" in row(out, "dagster instance")
    assert "eval-pipeline instance" in row(out, "dagster instance")


def test_an_instance_without_the_run_queue_and_limits_is_named_and_fixed(home):
    """What earlier demos wrote (telemetry only): `dagster dev` would run two runs of one
    partition at once (interleaved results) and every model-calling step in parallel."""
    (home / "dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n# mine\n")
    from eval_pipeline.cli.doctor import check_dagster_instance

    code, out = doctor()
    assert code == 1 and "FAIL" in row(out, "dagster instance")
    found = check_dagster_instance()
    assert "dagster/partition" in found.detail and 'pool "llm"' in found.detail
    assert "eval-pipeline instance" in found.fix
    kept = CliRunner().invoke(main, ["instance"], terminal_width=200)
    assert "exists and is not ours: left as it is" in " ".join(kept.output.split())
    (home / "dagster" / "dagster.yaml").unlink()
    made = CliRunner().invoke(main, ["instance"], terminal_width=200)
    assert made.exit_code == 0 and "dagster dev -w workspace.yaml" in made.output
    assert check_dagster_instance().ok and doctor()[0] == 0


def test_instance_names_a_workspace_file_only_where_there_is_one(home, tmp_path, monkeypatch):
    """A team's repository has no workspace.yaml (issue 46): `instance` told it to run
    `dagster dev -w workspace.yaml` anyway."""
    monkeypatch.chdir(tmp_path)
    told = " ".join(CliRunner().invoke(main, ["instance"], terminal_width=200).output.split())
    assert "workspace.yaml" not in told
    assert "dagster dev -m <your_package>.definitions" in told
    assert "build_definitions(__file__)" in told


@pytest.mark.postgres
@pytest.mark.parametrize("named_driver", [True, False])
def test_postgres_storage_must_name_the_psycopg2_driver(home, monkeypatch, pg_server, named_driver):
    """Without `scheme: postgresql+psycopg2`, SQLAlchemy 2.1 picks psycopg 3, on which
    dagster-postgres's NOTIFY fails: queued runs never start. The doctor says so."""
    config = (ROOT / "deploy" / "dagster.yaml").read_text()
    if not named_driver:
        config = config.replace("scheme: postgresql+psycopg2", "")
    (home / "dagster" / "dagster.yaml").write_text(config)
    with fresh_database(pg_server) as url:
        for key, value in dagster_pg_env(url).items():
            monkeypatch.setenv(key, value)
        code, out = doctor()
    line = row(out, "dagster instance")
    if named_driver:
        assert code == 0 and "ok" in line and "PostgresRunStorage" in line
    else:
        assert code == 1 and "FAIL" in line and "psycopg" in line
        assert "scheme: postgresql+psycopg2" in out


def test_an_endpoint_without_a_model_listing_is_not_refused():
    """Some proxies do not implement GET /models (404): the run is not blocked for it."""
    from starlette.applications import Starlette

    from eval_pipeline.llm.endpoint import available_models, require_model
    from eval_pipeline.llm.model_settings import LLMSettings
    from eval_pipeline_tests.model_server import BackgroundServer

    server = BackgroundServer(Starlette())  # no routes: every path answers 404
    server.start()
    try:
        settings = LLMSettings.create(model="any-model", api_key="sk-test",
                                      base_url=f"http://127.0.0.1:{server.port}/v1")  # fmt: skip
        assert available_models(settings) is None
        require_model(settings, "EVAL_LLM_MODEL")  # does not raise
    finally:
        server.stop()


def probe_finding() -> str:
    """The model probe's finding and fix as one line (the table folds long cells)."""
    from eval_pipeline.cli.doctor import check_model_probe

    finding = check_model_probe()
    return f"{'ok' if finding.ok else 'FAIL'}: {finding.detail} | fix: {finding.fix}"


def test_the_probe_says_which_setting_a_llama_cpp_server_needs(home, monkeypatch):
    from eval_pipeline_tests.model_server import LLAMA_CPP

    with LocalOpenAIServer(quirks=LLAMA_CPP) as server:
        monkeypatch.setenv("EVAL_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("EVAL_LLM_API_KEY", "none")
        monkeypatch.setenv("EVAL_LLM_MODEL", "offline")
        code, out = doctor()
        assert code == 1 and "FAIL" in row(out, "model probe")
        assert "1 problem(s): model probe" in out
        found = probe_finding()
        assert "models owned by me" in found
        assert "answered without a tool call" in found and "EVAL_LLM_TOOL_CHOICE=auto" in found
        monkeypatch.setenv("EVAL_LLM_TOOL_CHOICE", "auto")
        found = probe_finding()
        assert found.startswith("FAIL") and "EVAL_LLM_TOOL_TURN_CONTENT=empty" in found
        assert "EVAL_LLM_MAX_TOKENS_FIELD=max_tokens" in found  # its cap was not read
        monkeypatch.delenv("EVAL_LLM_TOOL_CHOICE")
        monkeypatch.setenv("EVAL_LLM_COMPAT", "llama.cpp")
        code, out = doctor()
        found = probe_finding()
    assert code == 0, out
    assert found.startswith("ok") and "calls tools (tool_choice auto)" in found


def test_a_busy_single_slot_server_is_reported_busy_not_misconfigured(home, monkeypatch):
    import threading

    import httpx

    from eval_pipeline_tests.model_server import ServerQuirks

    with LocalOpenAIServer(latency_s=3.0, quirks=ServerQuirks(single_slot=True)) as server:
        body = {"model": "offline", "messages": [{"role": "user", "content": "hi"}]}
        busy = threading.Thread(target=lambda: httpx.post(f"{server.base_url}/chat/completions",
                                                          json=body, timeout=10))  # fmt: skip
        busy.start()
        monkeypatch.setenv("EVAL_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("EVAL_LLM_API_KEY", "none")
        monkeypatch.setenv("EVAL_LLM_MODEL", "offline")
        monkeypatch.setenv("EVAL_LLM_CHECK_TIMEOUT_S", "0.5")
        code, out = doctor()
        busy.join()
    text = " ".join(out.split())
    assert code == 1 and "is busy" in text and "EVAL_LLM_CHECK_TIMEOUT_S" in text
    assert "EVAL_LLM_API_KEY is valid" not in text


def folded_row(output: str, check: str) -> str:
    """A row's status, found and fix cells, each with its folded lines joined."""
    lines = output.splitlines()
    start = lines.index(row(output, check))
    rows = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("│") or line.split("│")[1].strip():
            break
        rows.append(line)
    cells = [" ".join(" ".join(r.split("│")[k] for r in rows).split()) for k in (2, 3, 4)]
    return " | ".join(cells)


def test_doctor_says_and_probes_the_endpoint_the_agents_own_client_calls(tmp_path, monkeypatch):
    """memory-agent's graph builds its own model from ``Context.model`` with
    ``init_chat_model``: doctor says where that client goes (OPENAI_* from the exported
    EVAL_LLM_*), probes it, and names a context model that endpoint cannot serve (the
    template's Anthropic default, a model it does not list), never showing the key."""
    import shutil

    import yaml

    from eval_pipeline_tests.helpers import in_team_project
    from eval_pipeline_tests.teams import ZOO

    root = tmp_path / "memory-agent"
    shutil.copytree(ZOO / "memory_agent", root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "evals").mkdir()
    (root / "evals" / "cases.yaml").write_text(yaml.safe_dump([{
        "id": "tell", "input": {"message": "I love hiking."},
        "expected_output": {"expected_tools": ["upsert_memory"]},
        "metadata": {"category": "tell", "difficulty": "easy", "tier": "smoke"}}]))  # fmt: skip

    def declare(context: dict | None) -> None:
        agent = {"graph": "memory_agent.graph:graph"} | ({"context": context} if context else {})
        suite = {"agent": agent, "dataset": "evals", "evaluators": ["correctness"]}
        (root / "eval-pipeline.yaml").write_text(yaml.safe_dump({"suites": {"memory": suite}}))

    declare(None)
    with in_team_project(tmp_path, monkeypatch, root / "eval-pipeline.yaml", "memory_agent"), \
            LocalOpenAIServer(models=["stub-1"]) as server:  # fmt: skip
        monkeypatch.setenv("COLUMNS", "250")
        for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MODEL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("EVAL_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("EVAL_LLM_API_KEY", PLANTED)
        monkeypatch.setenv("EVAL_LLM_MODEL", "stub-1")
        said = {}
        for context in (None, {"model": "openai/gpt-9"}, {"model": "openai/stub-1"}):
            declare(context)
            _, out = doctor()
            assert PLANTED not in out
            said[str(context)] = folded_row(out, "agent endpoint")
    endpoint = (f"the agent's own OpenAI clients call {server.base_url} (EVAL_LLM_BASE_URL, "
                "as OPENAI_BASE_URL; key from EVAL_LLM_API_KEY, as OPENAI_API_KEY)")  # fmt: skip
    default, unlisted, served = said.values()
    assert "FAIL" in default and endpoint in default, default
    assert ("suite memory: its context's model anthropic/claude-sonnet-4-5-20250929 calls "
            "anthropic's API, and ANTHROPIC_API_KEY is not set") in default
    assert "set agent.context: {model: openai/MODEL}" in default
    assert "FAIL" in unlisted and "suite memory: gpt-9 is not among its models" in unlisted
    assert "ok" in served and "memory stub-1: reachable, 1 model(s)" in served, served
