"""The "Evaluate your own agent" flow (docs/own-agent.md, linked from the README), executed
as the page prints it.

The commands are read from the page's code block itself, not a copy, and run in order
in a team's repository outside this one, against a local model server: init, the edit of
the cases, the endpoint settings, a recorded production run, a new prompt labelled
staging, the recorded gate (which fails: the new prompt is worse), the commit, and the CI
command on a fresh machine with no endpoint and no key (the model server, still up, is
not asked). What the test supplies is only what a person would: the agent, the cases
their editor writes, the new prompt's file, the values behind "…".
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from eval_pipeline_tests.desk import CASES as DESK_CASES
from eval_pipeline_tests.desk import WORSE_PROMPT, DeskModel
from eval_pipeline_tests.model_server import LocalOpenAIServer
from eval_pipeline_tests.stranger import (
    PROMPT_V1,
    PROMPT_V2,
    TIMES,
    TOOLS,
    WEATHER,
    WeatherModel,
    cases_yaml,
)
from eval_pipeline_tests.teams import ZOO

DOCS = Path(__file__).resolve().parents[2] / "docs"
OWN_AGENT = DOCS / "own-agent.md"
FLOW = "## From install to a gated CI run"
BIN = Path(sys.executable).parent

# The team's agent, as the page describes one: a factory taking ctx, its prompt constant
# from before it used eval-pipeline (init makes it version 1).
AGENT = f"""
from langgraph.prebuilt import create_react_agent

from .tools import get_time, get_weather

SYSTEM_PROMPT = {PROMPT_V1!r}


def build(ctx):
    return create_react_agent(ctx.model, [get_weather, get_time], prompt=ctx.system_prompt())
"""


def doc_block(heading: str, page: Path = OWN_AGENT) -> list[str]:
    """The commands of the first bash block after ``heading`` in ``page``: comment lines
    and trailing comments dropped."""
    text = page.read_text()
    section = text[text.index(f"\n{heading}\n") :]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, f"no bash block under {heading}"
    commands = []
    for line in block.group(1).splitlines():
        command = re.split(r"\s{2,}#", line)[0].strip()
        if command and not command.startswith("#"):
            commands.append(command)
    return commands


def make_team(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "team-repo"
    (root / "my_agent").mkdir(parents=True)
    (root / "my_agent" / "__init__.py").write_text("")
    (root / "my_agent" / "tools.py").write_text(TOOLS.format(weather=repr(WEATHER),
                                                             times=repr(TIMES)))  # fmt: skip
    (root / "my_agent" / "graph.py").write_text(textwrap.dedent(AGENT))
    (root / "new-prompt.txt").write_text(PROMPT_V2)  # the change under review: worse
    return root, team_environment(root, tmp_path, cases_yaml())


def team_environment(root: Path, tmp_path: Path, cases: str) -> dict[str, str]:
    """A team's shell in its git repository ``root``: none of our settings, the CLI on
    PATH, an $EDITOR that writes ``cases`` (what the person types into the cases file)."""
    editor = tmp_path / "editor.py"
    editor.write_text(f"import sys\nopen(sys.argv[1], 'w').write({cases!r})\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("EVAL_", "LANGFUSE_", "OPENAI_", "DAGSTER_"))}  # fmt: skip
    env |= {"PATH": f"{BIN}:{env.get('PATH', '')}", "EVAL_HOME": str(tmp_path / "home"),
            "EDITOR": f"{sys.executable} {editor}", "GIT_AUTHOR_NAME": "Team",
            "GIT_AUTHOR_EMAIL": "team@example.com", "GIT_COMMITTER_NAME": "Team",
            "GIT_COMMITTER_EMAIL": "team@example.com"}  # fmt: skip
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return env


def shell(command: str, root: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def follow_the_page(root: Path, env: dict[str, str], server: LocalOpenAIServer, model: str,
                    ci_home: Path, prompt_from: str | None = None,
                    ) -> dict[str, subprocess.CompletedProcess]:  # fmt: skip
    """Run the page's commands in order as a person does (the export line: their endpoint
    for the "…"; the last command on a fresh machine with no endpoint and no key; the
    endpoint asked nothing there); each command's process by command. The gated runs
    fail (the new prompt is worse), the others succeed. ``prompt_from``: the constant the
    person names when init asks which of their prompt constants to take."""
    commands = doc_block(FLOW)
    assert len(commands) <= 10, commands
    install, *rest = commands
    assert install.startswith("pip install ")  # this checkout is installed already
    done: dict[str, subprocess.CompletedProcess] = {}
    where = root
    for command in rest:
        if command.startswith("export "):  # the person's endpoint, for the "…" here
            for assignment in shlex.split(command)[1:]:
                name = assignment.partition("=")[0]
                env[name] = {"EVAL_LLM_BASE_URL": server.base_url, "EVAL_LLM_API_KEY": "sk-team",
                             "EVAL_LLM_MODEL": model}[name]  # fmt: skip
            continue
        if command == commands[-1]:  # CI: a fresh clone, no endpoint, no key
            env = {k: v for k, v in env.items() if not k.startswith(("EVAL_LLM_", "OPENAI_"))}
            env["EVAL_HOME"] = str(ci_home)
            where = ci_home.parent / "ci-clone"  # only what the page's `git add` committed
            subprocess.run(["git", "clone", "-q", str(root), str(where)], check=True)
            served = server.requests
        done[command] = ran = shell(command, where, env)
        if command.startswith("eval-pipeline init") and prompt_from and ran.returncode == 2:
            assert "--prompt-from MODULE:CONSTANT" in " ".join(ran.stderr.split()), ran.stderr
            command = f"{command} --prompt-from {prompt_from}"  # as it asked
            done[command] = ran = shell(command, root, env)
        gated = command.startswith("eval-pipeline run") and "--label staging" in command
        expected = 1 if gated else 0  # the worse prompt fails the gate
        assert ran.returncode == expected, f"{command}\n{ran.stdout}\n{ran.stderr}"
        if command.startswith("eval-pipeline init"):  # the command it prints runs
            assert ran.stdout.strip().splitlines()[-1].strip() == (
                "eval-pipeline run --suite support"
            )
    assert server.requests == served  # CI asked nothing of the endpoint
    return done


@pytest.fixture(scope="module")
def followed(tmp_path_factory):
    """The team's repository after the page's ten commands, run once for the module (the
    flow is its slowest part; the test after it builds on its end state): the root, the
    team's environment, the CI command's process, the test's own directory."""
    tmp_path = tmp_path_factory.mktemp("own-agent")
    root, env = make_team(tmp_path)
    with LocalOpenAIServer(chat_model=lambda name: WeatherModel(model_name=name),
                           models=["weather-model"]) as server:  # fmt: skip
        done = list(follow_the_page(root, env, server, "weather-model",
                                    tmp_path / "ci-home").values())[-1]  # fmt: skip
    return root, env, done, tmp_path


def test_the_own_agent_flow_runs_as_printed_in_ten_commands(followed):
    root, _, done, _ = followed
    verdict = done.stdout.strip().splitlines()[-1]
    # the staging prompt is worse: its own floor or the gate fails it (the sequential gate
    # takes no further case once a check has failed)
    assert verdict.startswith("VERDICT: FAIL — ")
    assert "paired_gate" in verdict or "min_mean_scores" in verdict
    assert "baseline: production (v1) replayed from its recordings first" in " ".join(
        done.stdout.split()
    )
    recorded = root / "recordings" / "support"
    assert sorted(p.name for p in recorded.iterdir()) == ["v1.jsonl", "v2.jsonl"]
    lines = (recorded / "v1.jsonl").read_text().splitlines()
    header, first = json.loads(lines[0]), json.loads(lines[1])
    assert header["recording"]["suite"] == "support" and first["item"]
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True)
    assert "recordings/support/v2.jsonl" in tracked.stdout
    # init ignored each machine's results store; the CI command ran in a clone of what the
    # page's `git add` committed (before, it left out the agent's package: CI could not
    # import it) and wrote nothing git would pick up there
    assert {"my_agent/graph.py", ".gitignore"} <= set(tracked.stdout.split())
    assert (root / ".gitignore").read_text() == ".eval_home/\n"
    ignored = subprocess.run(["git", "check-ignore", "-q", ".eval_home/results.sqlite"],
                             cwd=root)  # fmt: skip
    assert ignored.returncode == 0


def python_block(heading: str, page: Path) -> str:
    """The first python block after ``heading`` in ``page``, as printed."""
    text = page.read_text()
    section = text[text.index(f"\n{heading}\n") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, f"no python block under {heading}"
    return block.group(1)


def test_the_docs_pytest_example_asserts_the_replayed_verdict(followed):
    """docs/running.md "From Python", run as printed by pytest in the team's repository
    after the own-agent flow, in CI (no endpoint, no key): with staging pointing at the
    production prompt it passes; pointed at the worse prompt, the test fails on its
    assertion (the verdict FAIL), never on an exception evaluate() raised."""
    root, env, _, tmp_path = followed
    (root / "test_support.py").write_text(python_block("## From Python", DOCS / "running.md"))
    ci = {k: v for k, v in env.items() if not k.startswith("EVAL_LLM_")}
    ci["EVAL_HOME"] = str(tmp_path / "ci-home")

    def pytest_in_repo() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "test_support.py"], cwd=root, env=ci, capture_output=True,
                              text=True, timeout=300)  # fmt: skip

    worse = pytest_in_repo()  # staging is the worse prompt v2: its recording replays
    assert worse.returncode == 1, worse.stdout + worse.stderr
    said = worse.stdout  # the test's own assertion, with what failed: the verdict was FAIL
    assert "AssertionError: ['min_mean_scores'" in said and "SetupError" not in said, said
    label = subprocess.run(["eval-pipeline", "prompts", "label", "support/assistant", "1",
                            "staging"], cwd=root, env=ci, capture_output=True,
                           text=True)  # fmt: skip
    assert label.returncode == 0, label.stderr
    same = pytest_in_repo()
    assert same.returncode == 0, same.stdout + same.stderr


def test_the_own_agent_flow_with_a_supervisor_desk_reproduces_its_verdict_in_ci(tmp_path):
    """The page's ten commands with the langgraph-supervisor desk (zoo/supervisor_desk: its
    own module-level ChatOpenAI on the team's OPENAI_* settings, three prompt constants,
    handoff ids drawn afresh, a refund waiting for a person), each process with
    ``PYTHONHASHSEED=random``: init asks which constant seeds the prompt and takes the one
    named; the recorded gate fails the worse supervisor prompt, and CI, with no endpoint
    and no key, reproduces that verdict from the recordings."""
    root = tmp_path / "desk-repo"
    shutil.copytree(ZOO / "supervisor_desk", root / "my_agent",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    (root / "my_agent" / "graph.py").write_text((root / "my_agent" / "agent.py").read_text())
    (root / "new-prompt.txt").write_text(WORSE_PROMPT)
    cases = yaml.safe_dump([case.as_dict() for case in DESK_CASES])
    env = team_environment(root, tmp_path, cases) | {"PYTHONHASHSEED": "random"}
    with LocalOpenAIServer(chat_model=lambda name: DeskModel(model_name=name),
                           models=["gpt-4o-mini"]) as server:  # fmt: skip
        env |= {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-team"}  # their own
        done = follow_the_page(root, env, server, "gpt-4o-mini", tmp_path / "ci-home",
                               prompt_from="my_agent.graph:SUPERVISOR_PROMPT")  # fmt: skip
    runs = [ran for command, ran in done.items() if command.startswith("eval-pipeline run")]
    production, gate, ci = runs
    seeded = (root / "prompts" / "support" / "assistant" / "v1.yaml").read_text()
    assert "Hand billing questions" in seeded
    assert production.stdout.strip().splitlines()[-1].startswith("VERDICT: PASS")
    recorded, replayed = (p.stdout.strip().splitlines()[-1] for p in (gate, ci))
    assert recorded.startswith("VERDICT: FAIL — ") and replayed == recorded
