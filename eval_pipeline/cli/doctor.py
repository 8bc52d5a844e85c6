"""`eval-pipeline doctor`: is this installation able to run evaluations, and if not, why?

Each check returns what it found and, when something is wrong, how to fix it. Nothing is
written anywhere, and every message passes through the secret redactor.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from sqlalchemy.engine import make_url

from eval_pipeline import settings
from eval_pipeline.cli.report import console
from eval_pipeline.core.errors import ExitCode
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.core.util.redact import redact


@dataclass(frozen=True)
class Finding:
    check: str
    ok: bool
    detail: str
    fix: str = ""
    skipped: bool = False  # not run because a check it needs failed; not a problem itself


Check = Callable[[], Finding]


def _failure(check: str, exc: BaseException, fix: str) -> Finding:
    return Finding(check, False, redact(f"{type(exc).__name__}: {exc}")[:500], fix)


def check_configuration() -> Finding:
    from eval_pipeline.agents.project import ProjectError, load_project
    from eval_pipeline.llm.model_settings import LLMSettings

    try:
        llm = LLMSettings.from_env()
    except ValueError as exc:
        return _failure("configuration", exc, "each EVAL_LLM_* setting must be one of its "
                        "values or a number in its range; see docs/configuration.md")  # fmt: skip
    try:
        project = load_project()
    except ProjectError as exc:
        return _failure("configuration", exc, "fix the project file named above, or create one "
                        "with `eval-pipeline init`")  # fmt: skip
    suites = ", ".join(project.suite_names)
    detail = f"{project.path}: suites {suites}; model {llm.model} ({llm.provider})"
    return Finding("configuration", True, detail)


def check_suites() -> Finding:
    """Every suite resolves (agent and evaluators import, thresholds load) and its dataset
    loads; a suite whose agent never read the prompt under test in its last run is named."""
    from eval_pipeline.agents.project import load_project
    from eval_pipeline.integrations.services import Services

    project = load_project()
    services = Services.from_env(project.prompts_dir)
    counts, tight = [], []
    for name in project.suite_names:
        try:
            suite = services.suite(project.suite(name))
            remote = f" from {suite.dataset_ref}" if suite.dataset_ref else ""
            cases = len(suite.load_cases())
            counts.append(f"{name} {cases}{remote} (the finest margin they can decide: "
                          f"{_finest(suite, cases)}; with a case that flips each way: "
                          f"{_advised(suite, cases)})")  # fmt: skip
        except Exception as exc:
            return _failure("suites", exc, f"fix the file named above (suite {name})")
        if why := _margin_out_of_reach(suite, cases):
            tight.append(why)
    detail = "cases: " + ", ".join(counts)
    if tight:
        detail += "; warning: " + "; ".join(tight)
    return Finding("suites", True, detail)


def _finest(suite: Suite, cases: int) -> str:
    """The smallest margin ``cases`` pairs could ever decide NOT WORSE at the suite's α
    (all tied: core/scoring/sequential.py ``finest_margin``)."""
    from eval_pipeline.core.scoring.sequential import finest_margin

    return f"{finest_margin(cases, suite.thresholds.regression.alpha):.3f}"


def _advised(suite: Suite, cases: int) -> str:
    """The margin ``cases`` cases gate with room for a few flips (core/scoring/margins.py)."""
    from eval_pipeline.core.scoring.margins import advised_margin, shown

    return shown(advised_margin(cases, suite.thresholds.regression.alpha))


def _margin_out_of_reach(suite: Suite, cases: int) -> str | None:
    """The suite's margin is finer than its cases can gate (core/scoring/margins.py): the
    sequential gate cannot decide it even when nothing moved (``pairs_to_clear`` above the
    cases), or can only when every case is tied, so a copy of the production prompt whose
    answers differ on a case or two ends UNDECIDED."""
    from eval_pipeline.core.scoring.margins import advised_margin, cases_for_margin
    from eval_pipeline.core.scoring.sequential import pairs_to_clear

    regression = suite.thresholds.regression
    margin, alpha = regression.margin, regression.alpha
    if margin >= advised_margin(cases, alpha):
        return None
    wanted = cases_for_margin(margin, alpha)
    needs = f"{wanted} cases" if wanted else "over 8,000 cases"
    advice = (f"set a margin of at least {_advised(suite, cases)} or grow the suite to {needs} "
              "(docs/gate.md#choosing-a-margin)")  # fmt: skip
    tied = pairs_to_clear(margin, alpha)
    if tied is None or tied > cases:
        return (f"{suite.name}'s margin {margin} needs {tied or 'over 4000'} paired cases to "
                f"be called not worse by --gate sequential, it has {cases}: {advice}")  # fmt: skip
    return (f"{suite.name}'s margin {margin} is decided by its {cases} cases only when every "
            f"pair is tied ({tied} needed): a case or two that flip leave it UNDECIDED; "
            f"{advice}")  # fmt: skip


def check_agents() -> Finding:
    """Each suite's agent builds, and reads the prompt it declares (otherwise prompt labels
    make no difference to it): a graph factory is built on the offline model and asked; a
    callable or a service, by the notes of its latest run (when the store can be read)."""
    from eval_pipeline.agents.project import load_project
    from eval_pipeline.core.running.agent import prompt_read
    from eval_pipeline.integrations.services import Services
    from eval_pipeline.llm.model_settings import LLMSettings

    project = load_project()
    services = Services.from_env(project.prompts_dir)
    deaf, kinds = [], []
    for name in project.suite_names:
        suite = project.suite(name)
        kinds.append(f"{name}: {suite.agent_description}")
        if suite.prompt_name is None:
            continue
        prompt = services.prompt(suite, label="production")
        agent = suite.make_agent(prompt, LLMSettings.create().with_prompt_config({}))
        read = prompt_read(agent)
        if read and not suite.prompt_read_when_built:
            read = not any("never read the prompt" in note for note in _latest_notes(name))
        if not read:
            deaf.append(f"{name} ({suite.prompt_name})")
    if deaf:
        return Finding("agents", False, "never read their prompt: " + ", ".join(deaf),
                       "read ctx.prompt (ctx.system_prompt()) in the agent, or drop `prompt:` "
                       "from the suite: its labels make no difference")  # fmt: skip
    return Finding("agents", True, "; ".join(kinds))


def _latest_notes(suite: str) -> list[str]:
    from eval_pipeline.core.store.results_store import ResultsStore, ResultsStoreError

    try:
        with ResultsStore(settings.results_url()) as store:
            return [n for run in store.list_runs(suite=suite, limit=1) for n in run.notes]
    except ResultsStoreError:  # reported by the results-store check
        return []


def check_prompts() -> Finding:
    from eval_pipeline.agents.project import load_project
    from eval_pipeline.integrations.services import Services

    project = load_project()
    services = Services.from_env(project.prompts_dir)
    found = []
    for name in project.suite_names:
        prompt_name = project.config.suites[name].prompt
        if not prompt_name:
            found.append(f"{name}: no prompt")
            continue
        try:
            prompt = services.registry().get_by_label(prompt_name, "production")
        except Exception as exc:
            where = services.registry().description
            fix = f"create {prompt_name} in {where} and label a version 'production'"
            return _failure("prompts", exc, fix)
        found.append(f"{prompt.name} v{prompt.version}")
    registry = services.registry().description
    return Finding("prompts", True, f"{registry}: production = " + ", ".join(found))


def check_model_endpoint() -> Finding:
    from eval_pipeline.llm.endpoint import available_models, busy, endpoint_name
    from eval_pipeline.llm.model_settings import LLMSettings

    llm = LLMSettings.from_env()
    if llm.provider == "offline":
        return Finding("model endpoint", True, "offline model (no EVAL_LLM_BASE_URL or key set)")
    endpoint = endpoint_name(llm)
    try:
        models = available_models(llm)
    except Exception as exc:
        if hint := busy(exc):
            return Finding("model endpoint", False, f"{endpoint}: {hint}",
                           "try again when the server is idle")  # fmt: skip
        fix = f"check that {endpoint} is reachable and EVAL_LLM_API_KEY is valid"
        return _failure("model endpoint", exc, fix)
    if models is None:
        return Finding("model endpoint", True, f"{endpoint}: reachable, does not list models")
    if llm.model not in models:
        detail = f"{endpoint}: {llm.model} is not among its {len(models)} model(s)"
        return Finding("model endpoint", False, detail, "set EVAL_LLM_MODEL to a listed model")
    return Finding("model endpoint", True, f"{endpoint}: {len(models)} model(s), {llm.model} ok")


def check_model_probe() -> Finding:
    """Two tiny calls as an evaluation makes them (llm/probe.py): tool calls, usage, the
    answer cap, a tool result after a tool call; and who serves the model."""
    from eval_pipeline.llm.model_settings import LLMSettings
    from eval_pipeline.llm.probe import probe

    llm = LLMSettings.from_env()
    if llm.provider == "offline":
        return Finding("model probe", True, "offline model: nothing to probe")
    report = probe(llm)
    served = f"{report.identity}; " if report.identity else ""
    if report.problems:
        what = "; ".join(problem for problem, _ in report.problems)
        fixes = "; ".join(dict.fromkeys(fix for _, fix in report.problems))
        return Finding("model probe", False, f"{served}{what}", fixes)
    return Finding("model probe", True, served + "; ".join(report.facts))


def check_agent_endpoint() -> Finding:
    """Where the agents' own model clients will send their requests in a live or recorded
    run (llm/agent_endpoint.py: OPENAI_* as set, else from EVAL_LLM_*, else langgraph.json's
    env), probed; and, for each graph whose context names its model, that this endpoint
    serves it."""
    from eval_pipeline.agents.project import load_project
    from eval_pipeline.llm.model_settings import LLMSettings

    project = load_project()
    declared = project.langgraph.env if project.langgraph else {}
    models = {}
    for name in project.suite_names:
        if (model := suite_context_model(project, name)) is not None:
            models[name] = model
    return agent_endpoint_finding(LLMSettings.from_env(), declared, models)


def suite_context_model(project: Any, name: str) -> str | None:
    """The model a graph suite's context names for the graph's own client, if any."""
    from eval_pipeline.agents.adapters.graph import context_model
    from eval_pipeline.agents.targets import import_target

    agent = project.config.suites[name].agent
    path = agent if isinstance(agent, str) else agent.get("graph")
    values = agent.get("context") if isinstance(agent, dict) else None
    try:
        return context_model(import_target(path), values) if isinstance(path, str) else None
    except ImportError:  # (the suites check names it)
        return None


def agent_endpoint_finding(llm: Any, declared: Mapping[str, str],
                           models: Mapping[str, str]) -> Finding:  # fmt: skip
    """The agent's endpoint, said and probed (doctor, init): a configured one must answer
    and list the models the suites' contexts name; a provider other than OpenAI's needs
    its own key."""
    from eval_pipeline.llm.agent_endpoint import agent_endpoint, endpoint_settings
    from eval_pipeline.llm.endpoint import available_models, busy

    endpoint = agent_endpoint(llm, declared)
    detail = f"the agent's own OpenAI clients call {endpoint.describe()}"
    problems, fixes = [], []
    openai_models = {}
    for suite, model in models.items():
        provider, name = re.split(r"[/:]", model, maxsplit=1)
        if provider == "openai":
            openai_models[suite] = name
            continue
        key = f"{provider.upper()}_API_KEY"
        if not os.environ.get(key):
            problems.append(f"suite {suite}: its context's model {model} calls {provider}'s "
                            f"API, and {key} is not set")  # fmt: skip
            fixes.append(f"set agent.context: {{model: openai/MODEL}} in the project file to "
                         f"call the endpoint above, or set {key}")  # fmt: skip
    if openai_models:
        detail += "; models from agent.context: " + ", ".join(
            f"{s} {m}" for s, m in openai_models.items())  # fmt: skip
    configured = not endpoint.source.startswith("OpenAI's default")
    if configured:
        try:
            listed = available_models(endpoint_settings(endpoint, llm.model))
        except Exception as exc:
            problems.append(busy(exc) or redact(f"{type(exc).__name__}: {exc}")[:300])
            fixes.append(f"check that {endpoint.base_url} is reachable and its key valid")
            listed = None
        else:
            detail += ": reachable" + (f", {len(listed)} model(s)" if listed is not None else "")
        for suite, name in openai_models.items():
            if listed is not None and name not in listed:
                problems.append(f"suite {suite}: {name} is not among its models")
                fixes.append("set agent.context.model to openai/ and one of its models")
    if problems:
        return Finding("agent endpoint", False, redact(f"{detail}; " + "; ".join(problems)),
                       "; ".join(dict.fromkeys(fixes)))  # fmt: skip
    return Finding("agent endpoint", True, redact(detail))


def check_langfuse() -> Finding:
    """Keys accepted, the server's version (is it one we support?), and scores that wait in
    the outbox or were set aside as undeliverable."""
    from eval_pipeline.integrations.langfuse_client import LangfuseSettings, version_status

    langfuse = LangfuseSettings.from_env()
    if langfuse is None:
        return Finding("langfuse", True, "not configured: local prompts, no tracing")
    try:
        version = langfuse.server_version()
    except Exception as exc:
        return _failure("langfuse", exc, "check LANGFUSE_BASE_URL (GET /api/public/health "
                        "must answer)")  # fmt: skip
    try:
        ok = langfuse.client().auth_check()
    except Exception as exc:
        return _failure("langfuse", exc, "check the key pair (LANGFUSE_PUBLIC_KEY / "
                        "LANGFUSE_SECRET_KEY) and that they belong to this server")  # fmt: skip
    if not ok:
        return Finding("langfuse", False, f"{langfuse.base_url}: Langfuse {version} refused the "
                       "keys", "check LANGFUSE_PUBLIC_KEY / LANGFUSE_SECRET_KEY")  # fmt: skip
    detail = f"{langfuse.base_url}: Langfuse {version}, project keys accepted"
    if outbox := _score_outbox():
        detail += f"; {outbox}"
    usable, note = version_status(version)
    if note:
        return Finding("langfuse", usable, f"{detail}; {note}",
                       "docs/langfuse.md lists the tested versions")  # fmt: skip
    return Finding("langfuse", True, detail)


def _score_outbox() -> str:
    from eval_pipeline.core.store.results_store import ResultsStore
    from eval_pipeline.integrations.langfuse_scores import OUTBOX_KIND, SET_ASIDE_KIND

    try:
        with ResultsStore(settings.results_url()) as store:
            waiting = len(store.queued(OUTBOX_KIND))
            set_aside = store.queue_errors(SET_ASIDE_KIND)
    except Exception:  # the results-store check reports the store's problems
        return ""
    parts = [f"{waiting} score(s) wait in the outbox"] if waiting else []
    if set_aside:
        reasons = sorted(set(set_aside.values()))
        parts.append(f"{len(set_aside)} set aside as undeliverable ({'; '.join(reasons[:2])})")
    return ", ".join(parts)


def check_results_store() -> Finding:
    from eval_pipeline.core.store.results_store import ResultsStore

    try:
        with ResultsStore(settings.results_url()) as store:
            runs = len(store.list_runs(limit=1000))
            description = repr(store)
    except Exception as exc:
        return _failure("results store", exc, "check EVAL_RESULTS_URL and that the database "
                        "server is running and reachable")  # fmt: skip
    return Finding("results store", True, f"{description}: {runs} run(s) recorded")


def check_dagster_instance() -> Finding:
    """The instance `dagster dev` and the daemon use: reachable, and with the run queue,
    the one-run-per-partition limit and the model pool (defs/instance.py)."""
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        return Finding("dagster instance", True, "DAGSTER_HOME not set: `dagster dev` would "
                       "use a temporary instance without the run queue and limits",
                       "run `eval-pipeline instance` and use the DAGSTER_HOME it prints "
                       "(production: deploy/dagster.yaml)")  # fmt: skip
    if not Path(home).is_dir():
        fix = "run `eval-pipeline instance` (local) or put deploy/dagster.yaml there (Postgres)"
        return Finding("dagster instance", False, f"DAGSTER_HOME={home} is not a directory", fix)
    from dagster import DagsterInstance

    from eval_pipeline.defs.instance import instance_problems

    try:
        with DagsterInstance.get() as instance:
            storage = type(instance.run_storage).__name__
            instance.get_runs_count()
            url = getattr(instance.run_storage, "postgres_url", None)
            problems = instance_problems(instance)
    except Exception as exc:
        return _failure("dagster instance", exc, f"check {home}/dagster.yaml and the "
                        "DAGSTER_PG_* variables; is the Postgres server up?")  # fmt: skip
    driver = make_url(url).get_driver_name() if url is not None else None
    if driver not in (None, "psycopg2"):
        # SQLAlchemy 2.1 made psycopg 3 the default driver; dagster-postgres's NOTIFY fails
        # on it, so runs are queued but never start
        fix = "add `scheme: postgresql+psycopg2` under storage.postgres.postgres_db"
        detail = f"Postgres storage uses the {driver} driver"
        return Finding("dagster instance", False, f"{home}: {detail}", fix)
    if problems:
        return Finding("dagster instance", False, f"{home}: " + "; ".join(problems),
                       "run `eval-pipeline instance` (local SQLite) or use deploy/dagster.yaml "
                       "(Postgres)")  # fmt: skip
    return Finding("dagster instance", True, f"{home}: {storage}, runs queued, one per "
                   "partition, model pool limited")  # fmt: skip


CHECKS: tuple[Check, ...] = (
    check_configuration, check_suites, check_agents, check_prompts, check_model_endpoint,
    check_model_probe, check_agent_endpoint,
    check_langfuse, check_results_store, check_dagster_instance,
)  # fmt: skip


# A check that means nothing when another failed: probing a server that cannot be reached
# would only repeat the endpoint's failure as a second problem.
REQUIRES: dict[Check, str] = {check_model_probe: "model endpoint",
                              check_agent_endpoint: "model endpoint"}  # fmt: skip


def run_checks(checks: tuple[Check, ...] = CHECKS) -> list[Finding]:
    findings: list[Finding] = []
    for check in checks:
        needed = REQUIRES.get(check)
        if needed and any(f.check == needed and not f.ok for f in findings):
            name = check.__name__.removeprefix("check_").replace("_", " ")
            findings.append(Finding(name, True, f"not run: {needed} failed", skipped=True))
            continue
        try:
            findings.append(check())
        except Exception as exc:  # a check must never crash the doctor
            name = check.__name__.removeprefix("check_").replace("_", " ")
            findings.append(_failure(name, exc, "unexpected: please report it with this line"))
    return findings


@click.command()
def doctor() -> None:
    """Check configuration, datasets, prompts, the model endpoint, Langfuse and the stores;
    print what is wrong and how to fix it (exit 1 if anything is)."""
    from rich.markup import escape
    from rich.table import Table

    findings = run_checks()
    table = Table(title="eval-pipeline doctor")
    for column in ("check", "status", "found", "how to fix"):
        table.add_column(column, overflow="fold")
    for f in findings:
        status = "[yellow]skip[/]" if f.skipped else "[green]ok[/]" if f.ok else "[red]FAIL[/]"
        table.add_row(f.check, status, escape(f.detail), escape(f.fix))
    console.print(table)
    failed = [f.check for f in findings if not f.ok]
    console.print(f"[red]{len(failed)} problem(s): {', '.join(failed)}[/]" if failed
                  else "[green]Everything needed to run evaluations is in place.[/]")  # fmt: skip
    sys.exit(ExitCode.FAIL if failed else ExitCode.PASS)
