"""The project file: every mistake names the file, the suite, the field and the value, exits
2 and writes nothing; agents are recognised by what they are."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from eval_pipeline.agents.project import ProjectError, load_project
from eval_pipeline.agents.targets import kind_of
from eval_pipeline.cli import main
from eval_pipeline_tests.helpers import clean_cli_env
from eval_pipeline_tests.stranger import cases_yaml

GOOD_SUITE = """\
  weather:
    agent: {agent}
    dataset: evals/weather
    evaluators: [correctness]
"""


def project_dir(tmp_path: Path, body: str, package: str | None = None, source: str = "") -> Path:
    """A project folder with a dataset, ``body`` as its eval-pipeline.yaml and, optionally,
    a package ``package`` whose agent.py holds ``source``."""
    root = tmp_path / "repo"
    (root / "evals" / "weather").mkdir(parents=True)
    (root / "evals" / "weather" / "cases.yaml").write_text(cases_yaml())
    if package:
        (root / package).mkdir()
        (root / package / "__init__.py").write_text("")
        (root / package / "agent.py").write_text(textwrap.dedent(source))
    (root / "eval-pipeline.yaml").write_text(body)
    return root


@pytest.fixture
def run_in(tmp_path, monkeypatch):
    def run(root: Path, *args: str):
        home = clean_cli_env(monkeypatch, tmp_path / "home", root / "eval-pipeline.yaml")
        result = CliRunner().invoke(main, ["run", "--suite", "weather", *args])
        assert result.exit_code == 2, result.output
        assert not (home / "results.sqlite").exists()  # nothing written
        return " ".join(result.output.split())  # rich wraps long lines

    return run


@pytest.mark.parametrize(
    ("suite", "expected"),
    [
        ("    repeats: 0\n", "suite 'weather': field 'repeats': Input should be greater than"),
        ("    evaluator: [groundedness]\n",
         "field 'evaluator': unknown field; did you mean 'evaluators'?"),
        ("    thresholds: 7\n", "field 'thresholds'"),
        ("    watched_labels: production\n",
         "field 'watched_labels': Input should be a valid list"),
    ],
)  # fmt: skip
def test_field_errors_name_the_suite_field_and_value(tmp_path, run_in, suite, expected):
    body = "suites:\n" + GOOD_SUITE.format(agent="x.y:z") + suite
    out = run_in(project_dir(tmp_path, body))
    assert "eval-pipeline.yaml" in out and expected in out


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("suites: {}\n", "field 'suites': Dictionary should have at least 1 item"),
        ("suite:\n  x: {}\n", "field 'suite': unknown field; did you mean 'suites'?"),
        ("suites:\n  'bad name!':\n    agent: a.b:c\n    dataset: d\n    evaluators: [x]\n",
         "suite name 'bad name!'"),
        ("suites:\n  weather:\n    agent: not an import path\n    dataset: evals/weather\n"
         "    evaluators: [correctness]\n", "'not an import path' is not an import path"),
        ("suites: [unclosed\n", "malformed YAML"),
        ("replay:\n  generated_patterns: ['ord-[0-9']\n" + "suites:\n"
         + GOOD_SUITE.format(agent="x.y:z"), "project: field 'replay.generated_patterns.0': "
         "Value error, 'ord-[0-9': not a regular expression: unterminated character set"),
        ("replay:\n  generated_patterns: ['ord-\\d{10}', 'x*']\n" + "suites:\n"
         + GOOD_SUITE.format(agent="x.y:z"), "field 'replay.generated_patterns.1': Value error, "
         "'x*': it matches the empty text"),
        ("replay:\n  generated_pattern: ['x']\n" + "suites:\n" + GOOD_SUITE.format(agent="x.y:z"),
         "field 'replay.generated_pattern': unknown field; did you mean 'generated_patterns'?"),
    ],
)  # fmt: skip
def test_project_level_errors(tmp_path, run_in, body, expected):
    out = run_in(project_dir(tmp_path, body))
    assert expected in out


def test_errors_speak_the_project_files_words_never_pydantics(tmp_path, run_in):
    """Before: `agent.function-after[_one_kind(), AgentConfig].state_feilds`, and a
    mapping agent also got "Input should be a valid string" from the other form."""
    body = (
        "suites:\n  weather:\n    agent:\n      graph: a.b:c\n      state_feilds: [x]\n"
        "      stepwise: {nod: agent}\n    dataset: evals/weather\n"
        "    evaluators: [correctness]\n    customer: {see: [order]}\n"
    )
    out = run_in(project_dir(tmp_path, body))
    assert "field 'agent.state_feilds': unknown field; did you mean 'state_fields'?" in out
    assert "field 'agent.stepwise.nod': unknown field; did you mean 'node'?" in out
    assert "field 'agent.stepwise.node': required, not given" in out
    assert "field 'customer.see': unknown field; did you mean 'sees'?" in out
    for internal in ("function-after", "AgentConfig", "valid string", "Extra inputs"):
        assert internal not in out


def test_an_unknown_suite_is_the_commands_mistake_not_the_files(tmp_path, monkeypatch):
    """Before: "unknown suite … Fix the project file and run again"."""
    root = project_dir(tmp_path, "suites:\n" + GOOD_SUITE.format(agent="x.y:z"))
    clean_cli_env(monkeypatch, tmp_path / "home", root / "eval-pipeline.yaml")
    result = CliRunner().invoke(main, ["run", "--suite", "wether"], terminal_width=300)
    text = " ".join(result.output.split())
    assert result.exit_code == 2
    assert "has no suite 'wether' (its suites: weather); did you mean 'weather'?" in text
    assert "with --suite" in text and "Fix the project file" not in text


def test_no_project_file_says_how_to_make_one(tmp_path, monkeypatch):
    clean_cli_env(monkeypatch, tmp_path / "home")
    monkeypatch.delenv("EVAL_PROJECT")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run", "--suite", "weather"])
    assert result.exit_code == 2
    assert "no eval-pipeline.yaml" in result.output and "eval-pipeline init" in result.output


AGENT_OK = """
    from langgraph.graph import StateGraph, MessagesState, START, END

    def build(ctx):
        graph = StateGraph(MessagesState)
        graph.add_node("noop", lambda state: {})
        graph.add_edge(START, "noop")
        graph.add_edge("noop", END)
        return graph.compile()

    def not_a_graph(ctx):
        return "a prompt string"

    def answer(input, ctx):
        return "not a dict"

    NUMBER = 3
"""


@pytest.mark.parametrize(
    ("agent", "evaluators", "expected"),
    [
        ("nowhere.agent:build", "[correctness]",
         "field 'agent': cannot import nowhere.agent:build: No module named 'nowhere'"),
        ("{pkg}.agent:missing", "[correctness]",
         "{pkg}.agent has no attribute 'missing'"),
        ("{pkg}.agent:NUMBER", "[correctness]",
         "{pkg}.agent:NUMBER is a int: expected a compiled LangGraph graph"),
        ("{pkg}.agent:build", "[tone_of_voice]",
         "field 'evaluators.0': unknown evaluator 'tone_of_voice' (built-in:"),
        ("{pkg}.agent:build", "[{{trajectory_match: {{mode: sideways}}}}]",
         "trajectory_match: mode='sideways': input should be 'strict', 'unordered'"),
        ("{pkg}.agent:build", "[{{correctness: {{strict: true}}}}]",
         "correctness: got an unexpected keyword argument 'strict' (it takes: no parameters)"),
        ("{pkg}.agent:build", "[nowhere.evals:score]",
         "field 'evaluators.0': cannot import nowhere.evals:score"),
        ("{pkg}.agent:build", "[{{llm_judge: {{model: gpt-4o}}}}]", "llm_judge needs a rubric"),
    ],
)  # fmt: skip
def test_imports_and_evaluators_are_checked_before_anything_runs(
    tmp_path, run_in, request, agent, evaluators, expected
):
    package = f"team_{abs(hash(request.node.callspec.id)) % 10**8}"  # new per case
    body = (
        f"suites:\n  weather:\n    agent: {agent.format(pkg=package)}\n"
        f"    dataset: evals/weather\n    evaluators: {evaluators.format()}\n"
    )
    out = run_in(project_dir(tmp_path, body, package, AGENT_OK))
    assert expected.format(pkg=package) in out


def test_a_factory_returning_the_wrong_type_says_what_was_expected(tmp_path, run_in):
    body = "suites:\n" + GOOD_SUITE.format(agent="wrong_type_pkg.agent:not_a_graph")
    out = run_in(project_dir(tmp_path, body, "wrong_type_pkg", AGENT_OK))
    assert "the factory wrong_type_pkg.agent:not_a_graph returned a str" in out
    assert "expected a compiled LangGraph graph" in out


def test_a_module_that_raises_on_import_is_named(tmp_path, run_in):
    body = "suites:\n" + GOOD_SUITE.format(agent="raising_pkg.agent:build")
    root = project_dir(tmp_path, body, "raising_pkg", "raise RuntimeError('no API key set')\n")
    out = run_in(root)
    assert "importing raising_pkg.agent for raising_pkg.agent:build raised RuntimeError" in out
    assert "no API key set" in out


def test_missing_dataset_and_thresholds_files(tmp_path, run_in):
    body = (
        "suites:\n  weather:\n    agent: ok_pkg.agent:build\n    dataset: evals/nope\n"
        "    evaluators: [correctness]\n    thresholds: evals/missing.yaml\n"
    )
    out = run_in(project_dir(tmp_path, body, "ok_pkg", AGENT_OK))
    assert "field 'dataset': 'evals/nope': no such directory" in out
    assert "field 'thresholds'" in out and "thresholds file not found" in out


def test_an_agent_answering_something_else_than_a_dict_is_a_runtime_problem(tmp_path, monkeypatch):
    """Every item errors: the run exits 2 (investigate), never 0 or 1 (a verdict)."""
    body = "suites:\n" + GOOD_SUITE.format(agent="answer_pkg.agent:answer")
    root = project_dir(tmp_path, body, "answer_pkg", AGENT_OK)
    clean_cli_env(monkeypatch, tmp_path / "home", root / "eval-pipeline.yaml")
    out = tmp_path / "out.json"
    result = CliRunner().invoke(main, ["run", "--suite", "weather", "--json", str(out)])
    assert result.exit_code == 2, result.output
    written = json.loads(out.read_text())
    assert written["exit_code"] == 2 and written["summary"]["n_errors"] == 6
    assert "answer_pkg.agent:answer returned a str; an agent returns a dict" in json.dumps(
        written["items"]
    )


def test_agents_are_recognised_by_what_they_are(tmp_path):
    root = project_dir(tmp_path, "suites:\n" + GOOD_SUITE.format(agent="kinds_pkg.agent:build"),
                       "kinds_pkg", AGENT_OK)  # fmt: skip
    project = load_project(root / "eval-pipeline.yaml")
    suite = project.suite("weather")
    assert suite.agent_description == "graph kinds_pkg.agent:build"
    from kinds_pkg import agent  # importable: the project folder is on the path

    assert kind_of(agent.build) == "graph" and kind_of(agent.answer) == "callable"
    assert kind_of(agent.build(None)) == "graph" and kind_of(agent.NUMBER) is None
    with pytest.raises(ProjectError, match="has no suite 'other'"):
        project.suite("other")


@pytest.mark.slow  # runs a suite and doctor
def test_an_agent_that_ignores_its_prompt_is_named_by_the_run_and_by_doctor(tmp_path, monkeypatch):
    """The suite declares a prompt, the graph factory never reads ctx.prompt: prompt labels
    make no difference to it, and both the run report and doctor say so."""
    from eval_pipeline_tests.stranger import write_project_files

    body = (
        "suites:\n"
        + GOOD_SUITE.format(agent="deaf_pkg.agent:build")
        + ("    prompt: weather/assistant\n")
    )
    root = project_dir(tmp_path, body, "deaf_pkg", AGENT_OK)
    write_project_files(root, package="unused_pkg")  # the prompts folder
    clean_cli_env(monkeypatch, tmp_path / "home", root / "eval-pipeline.yaml")
    (tmp_path / "home" / "dagster").mkdir(parents=True)
    monkeypatch.setenv("COLUMNS", "300")  # one table row per line
    ran = CliRunner().invoke(main, ["run", "--suite", "weather"], terminal_width=300)
    assert "never read the prompt under test (weather/assistant)" in " ".join(ran.output.split())
    doctor = CliRunner().invoke(main, ["doctor"], terminal_width=300)
    assert doctor.exit_code == 1
    assert "never read their prompt: weather (weather/assistant)" in " ".join(doctor.output.split())


FACTORIES = """
    from langgraph.graph import StateGraph, MessagesState, START, END

    SEEN = {}

    def _graph(name, ctx):
        SEEN[name] = ctx
        graph = StateGraph(MessagesState)
        graph.add_node("noop", lambda state: {})
        graph.add_edge(START, "noop")
        graph.add_edge("noop", END)
        return graph.compile()

    def positional(ctx):
        return _graph("positional", ctx)

    def optional(ctx=None):
        return _graph("optional", ctx)

    def keyword_only(*, ctx):
        return _graph("keyword_only", ctx)

    def bare():
        return _graph("bare", None)

    def raising(ctx):
        return {}["OPENAI_API_KEY"]
"""


@pytest.mark.parametrize("factory", ["positional", "optional", "keyword_only", "bare"])
def test_a_factory_that_accepts_ctx_gets_it(tmp_path, factory):
    """build(ctx=None) was called as build(): it evaluated its own model and prompt."""
    from eval_pipeline.llm.model_settings import LLMSettings

    package = f"factories_{factory}"
    body = "suites:\n" + GOOD_SUITE.format(agent=f"{package}.agent:{factory}")
    root = project_dir(tmp_path, body, package, FACTORIES)
    suite = load_project(root / "eval-pipeline.yaml").suite("weather")
    suite.make_agent(None, LLMSettings())
    module = __import__(f"{package}.agent", fromlist=["SEEN"])
    given = module.SEEN[factory]
    assert (given is None) == (factory == "bare")
    assert given is None or given.suite == "weather"


def test_a_factory_that_raises_exits_2_naming_it(tmp_path, run_in):
    """Before: exit 1 and a traceback, which CI reads as "the agent got worse"."""
    body = "suites:\n" + GOOD_SUITE.format(agent="raising_factory.agent:raising")
    out = run_in(project_dir(tmp_path, body, "raising_factory", FACTORIES))
    assert "the agent factory raising_factory.agent:raising raised KeyError: 'OPENAI_API_KEY'" in (
        out
    )  # fmt: skip
    assert "raising_factory/agent.py:27" in out and "check what it reads from the environment" in (
        out
    )  # fmt: skip


def init_in(root: Path, monkeypatch, *args: str):
    clean_cli_env(monkeypatch, root / "home", root / "eval-pipeline.yaml")
    monkeypatch.chdir(root)
    return CliRunner().invoke(main, ["init", *args], catch_exceptions=False)


def test_init_creates_the_prompt_from_the_agents_own_and_labels_it_production(
    tmp_path, monkeypatch
):
    """Before: init wrote `prompt:` into the suite and created nothing, so the command it
    printed next failed ("has no label 'production' … labels: none")."""
    root = tmp_path / "repo"
    (root / "helper_agent").mkdir(parents=True)
    (root / "helper_agent" / "__init__.py").write_text("")
    (root / "helper_agent" / "graph.py").write_text(textwrap.dedent(FACTORIES) + textwrap.dedent(
        """
        SYSTEM_PROMPT = "You answer questions about the weather."
        GREETING_PROMPT = "Say hello."
        """
    ))  # fmt: skip
    made = init_in(root, monkeypatch, "--agent", "helper_agent.graph:optional", "--name",
                   "helper", "--prompt", "helper/assistant")  # fmt: skip
    assert made.exit_code == 0, made.output
    text = " ".join(made.output.split())
    assert "prompt helper/assistant: created v1" in text
    assert "from helper_agent.graph:SYSTEM_PROMPT, labelled production" in text
    version = yaml.safe_load((root / "prompts" / "helper" / "assistant" / "v1.yaml").read_text())
    assert version["prompt"] == "You answer questions about the weather."
    labels = yaml.safe_load((root / "prompts" / "labels.yaml").read_text())
    assert labels == {"helper/assistant": {"production": 1}}
    printed = made.output.strip().splitlines()[-1].split()
    assert printed == ["eval-pipeline", "run", "--suite", "helper"]
    ran = CliRunner().invoke(main, printed[1:])  # as printed: evaluated, not refused
    assert ran.exit_code in (0, 1), ran.output
    assert "v1" in ran.output and "has no label" not in ran.output
    again = init_in(root, monkeypatch, "--agent", "helper_agent.graph:optional", "--name",
                    "other", "--prompt", "helper/assistant")  # fmt: skip
    assert "the registry's production version (v1)" in " ".join(again.output.split())
    assert not (root / "prompts" / "helper" / "assistant" / "v2.yaml").exists()


def test_init_without_a_prompt_in_the_agent_writes_a_placeholder_it_names(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    (root / "bare_agent").mkdir(parents=True)
    (root / "bare_agent" / "__init__.py").write_text("")
    (root / "bare_agent" / "graph.py").write_text(textwrap.dedent(FACTORIES))
    made = init_in(root, monkeypatch, "--agent", "bare_agent.graph:positional", "--name", "bare",
                   "--prompt", "bare/assistant")  # fmt: skip
    assert made.exit_code == 0, made.output
    assert "with a PLACEHOLDER text" in " ".join(made.output.split())
    version = yaml.safe_load((root / "prompts" / "bare" / "assistant" / "v1.yaml").read_text())
    assert "placeholder written by eval-pipeline init" in version["prompt"]


TEMPLATE_GRAPH = """
    from dataclasses import dataclass

    from langgraph.graph import END, START, MessagesState, StateGraph

    SYSTEM_PROMPT = "You answer questions about the weather."


    @dataclass
    class Context:
        system_prompt: str = SYSTEM_PROMPT


    builder = StateGraph(MessagesState, context_schema=Context)
    builder.add_node("noop", lambda state: {})
    builder.add_edge(START, "noop")
    builder.add_edge("noop", END)
    graph = builder.compile()  # reads Context.system_prompt, as LangGraph's templates do
    plain = StateGraph(MessagesState).add_node("noop", lambda state: {}).add_edge(
        START, "noop").compile()  # reads no prompt at all
"""


@pytest.mark.parametrize(("agent", "said"), [
    ("reading_agent.graph:optional", "ctx.system_prompt() in build(ctx) or fn(input, ctx)"),
    ("reading_agent.template:plain", "this graph is built at import with no "
                                    "Context.system_prompt, so it is never handed one"),
])  # fmt: skip
def test_init_says_the_agent_must_read_the_prompt_and_ignores_eval_home(
    tmp_path, monkeypatch, agent, said
):
    """init copied SYSTEM_PROMPT into version 1 and said nothing of how versions reach the
    agent: a graph built at import (a LangGraph template reading Context.system_prompt)
    never sees one, and every prompt version evaluated the same. And .eval_home, each
    machine's results store, was not ignored: `git add .` committed it."""
    root = tmp_path / "repo"
    (root / "reading_agent").mkdir(parents=True)
    (root / "reading_agent" / "__init__.py").write_text("")
    (root / "reading_agent" / "graph.py").write_text(textwrap.dedent(FACTORIES) + (
        '\nSYSTEM_PROMPT = "You answer questions about the weather."\n'))  # fmt: skip
    (root / "reading_agent" / "template.py").write_text(textwrap.dedent(TEMPLATE_GRAPH))
    (root / ".gitignore").write_text("__pycache__/")  # the team's own, no newline at its end
    made = init_in(root, monkeypatch, "--agent", agent, "--name", "helper", "--prompt",
                   "helper/assistant")  # fmt: skip
    assert made.exit_code == 0, made.output
    text = " ".join(made.output.split())
    assert ("for prompt versions to make any difference, the agent must read the one under "
            f"test: {said}") in text  # fmt: skip
    assert f"added .eval_home/ to {root / '.gitignore'}" in text
    template = init_in(root, monkeypatch, "--agent", "reading_agent.template:graph", "--name",
                       "template", "--prompt", "helper/assistant")  # fmt: skip
    assert ("the graph reads Context.system_prompt: each run puts the prompt version under "
            "test there") in " ".join(template.output.split())  # fmt: skip
    assert (root / ".gitignore").read_text() == "__pycache__/\n.eval_home/\n"
    again = init_in(root, monkeypatch, "--agent", agent, "--name", "other")
    assert again.exit_code == 0, again.output
    assert (root / ".gitignore").read_text() == "__pycache__/\n.eval_home/\n"  # once only
    assert ".gitignore" not in again.output
    for name in [m for m in sys.modules if m.startswith("reading_agent")]:
        del sys.modules[name]


def test_init_writes_a_gitignore_where_there_is_none(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    (root / "plain_agent").mkdir(parents=True)
    (root / "plain_agent" / "__init__.py").write_text("")
    (root / "plain_agent" / "graph.py").write_text(textwrap.dedent(FACTORIES))
    made = init_in(root, monkeypatch, "--agent", "plain_agent.graph:positional", "--name", "p")
    assert made.exit_code == 0, made.output
    assert (root / ".gitignore").read_text() == ".eval_home/\n"
    assert f"wrote {root / '.gitignore'}" in " ".join(made.output.split())


def test_a_case_lacking_what_its_evaluators_read_is_refused_by_name(tmp_path, run_in):
    """Before: a misspelled ``expected_tool:`` (or no expected_output at all) was accepted
    and correctness scored 1.0, as if the case expected no tool."""
    body = "suites:\n" + GOOD_SUITE.format(agent="fields_pkg.agent:build").replace(
        "evaluators: [correctness]", "evaluators: [correctness, completeness]"
    )
    root = project_dir(tmp_path, body, "fields_pkg", AGENT_OK)
    cases = root / "evals" / "weather" / "cases.yaml"
    text = cases.read_text().replace('"expected_tools": ["get_time"]',
                                     '"expected_tool": ["get_time"]', 1)  # fmt: skip
    cases.write_text(text + textwrap.dedent("""\
        - id: no-expectations
          input: {message: "Weather in Lima?"}
          metadata: {category: weather, difficulty: easy, tier: full}
    """))  # fmt: skip
    out = run_in(root)
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "id: t-tokyo" in row)
    assert (f"{cases}:{line} case 't-tokyo': field 'expected_output.expected_tools': missing: "
            "correctness reads 'expected_output.expected_tools' (did you mean "
            "'expected_tool'?)") in out  # fmt: skip
    assert "case 'no-expectations': field 'expected_output.expected_tools': missing" in out
    assert "case 'no-expectations': field 'expected_output.expected_fields': missing: " \
           "completeness reads" in out  # fmt: skip


def test_case_fields_no_evaluator_reads_are_reported(tmp_path, monkeypatch):
    """Reported with the run (a typo, or an evaluator missing from the suite), not refused:
    a team's own undeclared evaluator may read anything, and then nothing is said."""
    body = "suites:\n" + GOOD_SUITE.format(agent="extra_pkg.agent:build")
    root = project_dir(tmp_path, body, "extra_pkg", AGENT_OK + "\n    def mine(**kw):\n"
                       "        return 1.0\n")  # fmt: skip
    clean_cli_env(monkeypatch, tmp_path / "home", root / "eval-pipeline.yaml")
    ran = CliRunner().invoke(main, ["run", "--suite", "weather"], terminal_width=400)
    text = " ".join(ran.output.split())
    assert ran.exit_code in (0, 1), ran.output
    assert "6 case field(s) no evaluator of the suite reads" in text
    assert "case 'w-paris': field 'expected_output.expected_fields': no evaluator of this " \
           "suite reads it" in text  # fmt: skip
    project = root / "eval-pipeline.yaml"
    project.write_text(
        project.read_text().replace(
            "evaluators: [correctness]", "evaluators: [correctness, extra_pkg.agent:mine]"
        )
    )
    ran = CliRunner().invoke(main, ["run", "--suite", "weather"], terminal_width=400)
    assert "no evaluator of the suite reads" not in " ".join(ran.output.split())
