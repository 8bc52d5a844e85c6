"""A team evaluates its own agent: in a directory outside this repository, with its own
package, cases, prompts and model server, through the CLI as a subprocess (the way a
stranger runs it): init, run, a staging-vs-production gate, record then replay with no
endpoint, and our Dagster assets materialized from its own definitions module."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from eval_pipeline_tests.model_server import LocalOpenAIServer
from eval_pipeline_tests.stranger import WeatherModel, cases_yaml, write_project_files

BIN = Path(sys.executable).parent
CLEAN = ("EVAL_", "LANGFUSE_", "OPENAI_", "DAGSTER_")


def environment(root: Path, server: LocalOpenAIServer | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLEAN)}
    env |= {"EVAL_HOME": str(root / ".eval_home"), "DAGSTER_HOME": str(root / "dagster")}
    if server is not None:
        env |= {"EVAL_LLM_BASE_URL": server.base_url, "EVAL_LLM_API_KEY": "sk-team-key",
                "EVAL_LLM_MODEL": "weather-model"}  # fmt: skip
    return env


def cli(root: Path, server: LocalOpenAIServer | None, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "eval-pipeline"), *args], cwd=root, capture_output=True,
                          text=True, env=environment(root, server), timeout=300)  # fmt: skip


@pytest.fixture
def server():
    model = LocalOpenAIServer(chat_model=lambda name: WeatherModel(model_name=name),
                              models=["weather-model"])  # fmt: skip
    with model as served:
        yield served


def start_project(tmp_path: Path, agent: str, kind: str = "react") -> Path:
    """The team's repository: their package and prompts, then `eval-pipeline init`, then
    their own cases in place of the three examples."""
    root = tmp_path / "team-repo"
    root.mkdir()
    write_project_files(root, kind=kind)
    made = cli(root, None, "init", "--agent", agent, "--name", "weather",
               "--prompt", "weather/assistant")  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    assert "eval-pipeline run --suite weather" in made.stdout
    examples = yaml.safe_load((root / "evals" / "weather" / "cases.yaml").read_text())
    assert len(examples) == 3
    (root / "evals" / "weather" / "cases.yaml").write_text(cases_yaml())
    return root


def cases_yaml_ids() -> str:
    return json.dumps([c["id"] for c in yaml.safe_load(cases_yaml())])


def summary_of(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    ("agent", "kind"), [("weather_agent.agent:build", "react"),
                        ("weather_agent.agent:answer", "callable")],
)  # fmt: skip
def test_a_team_runs_gates_records_and_replays_its_own_agent(tmp_path, server, agent, kind):
    root = start_project(tmp_path, agent, kind)
    project = yaml.safe_load((root / "eval-pipeline.yaml").read_text())
    assert project["suites"]["weather"]["agent"] == agent

    production = cli(root, server, "run", "--suite", "weather", "--json", "prod.json")
    assert production.returncode == 0, production.stdout + production.stderr
    result = summary_of(root / "prod.json")
    assert result["summary"]["metrics"]["overall"] == 1.0 and result["summary"]["n_errors"] == 0
    assert result["summary"]["tokens"]["input"] > 0  # counted through the team's own graph
    assert "weather-model" in result["run"]["model_params"]["model"]

    staging = cli(root, server, "run", "--suite", "weather", "--label", "staging", "--tier",
                  "smoke", "--baseline", "production", "--json", "staging.json")  # fmt: skip
    assert staging.returncode == 1, staging.stdout + staging.stderr
    gate = summary_of(root / "staging.json")["gate"]
    paired = next(c for c in gate["checks"] if c["name"] == "paired_gate")
    # The four smoke cases are no evidence for the gate until its seeded draw reaches them
    # (a hand-picked tier cannot carry the decision): undecided, with the worse items
    # shown, and the run fails on the staging version's own floor (the sequential gate
    # takes no further case once a check has failed: FAIL is known).
    assert paired["outcome"] == "warn"
    said = re.search(r"no paired cases yet|after (\d) pairs?: undecided", paired["description"])
    assert said and int(said[1] or 0) <= 4, paired["description"]  # (the candidate's own draw)
    assert "w-paris" in json.dumps(paired["worse_items"])
    checks = {c["name"]: c["result"] for c in summary_of(root / "staging.json")["checks"]}
    assert checks["min_mean_scores"] == "FAIL" and checks["all_items_pass"] == "N/A"

    before = server.app.state.stats["requests"]
    recorded = cli(root, server, "run", "--suite", "weather", "--record", "--json", "rec.json")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    served = server.app.state.stats["requests"]
    lines = (root / "recordings" / "weather" / "v1.jsonl").read_text().splitlines()
    entries = [json.loads(line) for line in lines[1:]]  # (after the header line)
    assert len(entries) == served - before > len(json.loads(cases_yaml_ids()))  # every call
    assert {e["request"]["model"] for e in entries} == {"weather-model"}

    replayed = cli(root, None, "run", "--suite", "weather", "--replay", "--json", "replay.json")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert server.app.state.stats["requests"] == served  # no endpoint was asked
    again, first = summary_of(root / "replay.json"), summary_of(root / "rec.json")
    assert again["summary"]["metrics"] == first["summary"]["metrics"]
    assert again["run"]["model_params"]["recording"] == "replay"

    # A prompt never recorded has nothing to replay: refused before anything runs.
    unrecorded = cli(root, None, "run", "--suite", "weather", "--label", "staging", "--replay")
    assert unrecorded.returncode == 2 and "no recordings at" in unrecorded.stderr
    assert "--prompt-version 2 --record" in unrecorded.stderr

    # A changed prompt is a miss, never a silent pass.
    v1 = root / "prompts" / "weather" / "assistant" / "v1.yaml"
    v1.write_text(v1.read_text().replace("every weather", "each weather"))
    changed = cli(root, None, "run", "--suite", "weather", "--replay", "--json", "miss.json")
    assert changed.returncode == 2  # every item failed: a runtime problem, not a verdict
    missed = summary_of(root / "miss.json")
    assert missed["summary"]["n_errors"] == missed["summary"]["n_items"]
    errors = [o["error"] for o in missed["items"]]
    assert all("no recorded answer" in e and "messages[0].content" in e for e in errors)


def test_the_teams_definitions_module_materializes_our_assets(tmp_path, server):
    root = start_project(tmp_path, "weather_agent.agent:build")
    (root / "weather_agent" / "definitions.py").write_text(
        textwrap.dedent("""\
        from pathlib import Path

        from eval_pipeline.defs import build_definitions

        defs = build_definitions(Path(__file__).parents[1] / "eval-pipeline.yaml")
    """)
    )
    script = textwrap.dedent("""\
        from dagster import DagsterInstance
        from weather_agent.definitions import defs

        instance = DagsterInstance.get()
        instance.add_dynamic_partitions("suite_version", ["weather/v1"])
        key = "weather/v1"
        golden = defs.resolve_job_def("golden_dataset_job").execute_in_process(
            partition_key="weather", instance=instance)
        run = defs.resolve_job_def("eval_job").execute_in_process(
            partition_key=key, instance=instance)
        meta = run.asset_materializations_for_node("eval_summary")[0].metadata
        print(golden.success, run.success, meta["weather.mean_overall"].value,
              sorted(defs.resolve_sensor_def("prompt_label_sensor").job_name for _ in [0]))
    """)
    (root / "dagster").mkdir()
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True,
                          text=True, env=environment(root, server), timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[:3] == ["True", "True", "1.0"], done.stdout


def test_an_agent_deployed_as_a_service(tmp_path):
    """`agent: {http: URL}`: the case input is POSTed, the JSON answer is the output; the
    service is told the prompt version under test; its own usage report is counted."""
    from eval_pipeline_tests.model_server import BackgroundServer
    from eval_pipeline_tests.stranger import weather_service

    app = weather_service()
    service = BackgroundServer(app)
    service.start()
    try:
        url = f"http://127.0.0.1:{service.port}/agent"
        root = tmp_path / "team-repo"
        root.mkdir()
        write_project_files(root)
        made = cli(root, None, "init", "--agent", url, "--name", "weather",
                   "--prompt", "weather/assistant")  # fmt: skip
        assert made.returncode == 0, made.stdout + made.stderr
        (root / "evals" / "weather" / "cases.yaml").write_text(cases_yaml())
        production = cli(root, None, "run", "--suite", "weather", "--json", "prod.json")
        assert production.returncode == 0, production.stdout + production.stderr
        result = summary_of(root / "prod.json")
        assert result["summary"]["metrics"]["overall"] == 1.0
        assert result["summary"]["tokens"] == {"input": 40 * 6, "output": 12 * 6}
        assert any("no output is reused" in w for w in result["warnings"])  # unversioned
        headers = app.state.seen[0]["headers"]
        assert headers["x-eval-prompt"] == "weather/assistant"
        assert headers["x-eval-prompt-version"] == "1" and headers["x-eval-case-id"]
        staging = cli(root, None, "run", "--suite", "weather", "--label", "staging",
                      "--baseline", "production", "--json", "staging.json")  # fmt: skip
        assert staging.returncode == 1, staging.stdout + staging.stderr
        # the staging floor fails it; the suite's few cases leave the paired gate at most
        # undecided (never a pass)
        assert summary_of(root / "staging.json")["gate"]["outcome"] in ("fail", "warn")
    finally:
        service.stop()
