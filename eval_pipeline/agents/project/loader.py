"""Load a project file and resolve its suites: imports, adapters, evaluators, thresholds.

Every problem names the file, the suite, the field and the value, and says what to do;
nothing runs until the file is right (the CLI exits 2).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import traceback
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import BaseModel, ValidationError

from eval_pipeline import settings
from eval_pipeline.agents.adapters.callable import CallableAgent
from eval_pipeline.agents.adapters.graph import GraphAgent, GraphOptions
from eval_pipeline.agents.adapters.http import HttpAgent
from eval_pipeline.agents.adapters.stepwise import (
    STEP_RUBRIC,
    StepwiseSpec,
    judge_answers,
    judge_steps,
)
from eval_pipeline.agents.context import AgentContext
from eval_pipeline.agents.customer import LLMCustomer, customer_version
from eval_pipeline.agents.langfuse_prompt import serving
from eval_pipeline.agents.project.schema import (
    AgentConfig,
    CustomerConfig,
    ProjectConfig,
    StepwiseConfig,
    SuiteConfig,
)
from eval_pipeline.core.prompts import PromptVersion
from eval_pipeline.core.running.agent import Agent
from eval_pipeline.core.scoring.thresholds import Thresholds, ThresholdsError, load_thresholds
from eval_pipeline.core.suite import Suite
from eval_pipeline.evaluators import registry
from eval_pipeline.evaluators.base import evaluator_name
from eval_pipeline.evaluators.judge import llm_judge
from eval_pipeline.llm.factory import create_chat_model
from eval_pipeline.llm.settings import LLMSettings


class ProjectError(ValueError):
    """The project file cannot be used; lists every problem found."""

    what = "invalid project"
    fix = "Fix the project file and run again; nothing was run."

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{self.what} ({len(problems)} problem(s)):\n{shown}\n{self.fix}")


class UnknownSuite(ProjectError):
    """``--suite`` names a suite the project file does not declare: the command's mistake."""

    what = "unknown suite"
    fix = "Name one of the project's suites with --suite (eval-pipeline suites lists them)."


class AgentBuildError(ProjectError):
    """An agent factory returned something that is not an agent."""


def find_project() -> Path:
    found = settings.project_file()
    if found is None:
        raise ProjectError([
            f"no {settings.PROJECT_FILE} in {Path.cwd()} or its parents: run "
            "`eval-pipeline init --agent package.module:attribute --name NAME` to create one, "
            "or name it with --project PATH (EVAL_PROJECT)"
        ])  # fmt: skip
    if not found.is_file():
        raise ProjectError([f"{found}: project file not found (--project / EVAL_PROJECT)"])
    return found


def load_project(path: Path | str | None = None) -> Project:
    """Read and validate a project file (default: the one ``find_project`` finds)."""
    file = Path(path).resolve() if path is not None else find_project()
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ProjectError([f"{file}: project file not found"]) from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{file}:{mark.line + 1}" if mark else str(file)
        reason = getattr(exc, "problem", None) or exc
        raise ProjectError([f"{where}: malformed YAML: {reason}"]) from None
    try:
        config = ProjectConfig.model_validate(raw or {})
    except ValidationError as exc:
        raise ProjectError(_schema_problems(file, exc)) from None
    return Project(file, config)


def _schema_problems(file: Path, exc: ValidationError) -> list[str]:
    """Each validation error in the user's words: the suite, the field's path as written in
    the file (never pydantic's union and validator names), what is wrong, the value, and a
    near field name for a misspelled one."""
    problems = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        if loc[:1] == ["suites"] and len(loc) >= 2:
            head, rest = f"suite '{loc[1]}'", loc[2:]
        else:
            head, rest = "project", loc
        if err["type"] == "string_type" and isinstance(err.get("input"), dict):
            continue  # `agent:` written as a mapping: the error of its other form (a string)
        path = [p for p in rest if not _INTERNAL.match(p)]
        fieldname = ".".join(path) or "(whole entry)"
        message = {"missing": "required, not given", "extra_forbidden": "unknown field"}.get(
            err["type"], err["msg"]
        )
        got = "" if err["type"] in ("missing", "extra_forbidden") else (
            f" (got {_short(err.get('input'))})"
        )  # fmt: skip
        hint = ""
        if err["type"] == "extra_forbidden" and path:
            near = difflib.get_close_matches(path[-1], _fields_at(head, path[:-1]), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
        problems.append(f"{file}: {head}: field '{fieldname}': {message}{got}{hint}")
    return list(dict.fromkeys(problems))


# Parts of pydantic's error locations that name its machinery, not the user's fields:
# a union member ("str", "AgentConfig"), a validator ("function-after[_one_kind(), …]").
_INTERNAL = re.compile(r"^(str|int|float|bool|dict\[.*|list\[.*|function-\w+\[.*|[A-Z]\w*Config)$")


def _fields_at(head: str, parents: list[str]) -> list[str]:
    """The field names allowed where an unknown one was written."""
    model: Any = ProjectConfig if head == "project" else SuiteConfig
    for part in parents:
        field = model.model_fields.get(part)
        nested = [a for a in typing.get_args(field.annotation)] if field else []
        nested = [t for t in nested or [field.annotation if field else None]
                  if isinstance(t, type) and issubclass(t, BaseModel)]  # fmt: skip
        if not nested:
            return []
        model = nested[0]
    return list(model.model_fields)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Project:
    path: Path
    config: ProjectConfig
    _suites: dict[str, Suite] = field(default_factory=dict, repr=False)

    @property
    def dir(self) -> Path:
        return self.path.parent

    @property
    def prompts_dir(self) -> Path:
        return Path(os.environ.get("EVAL_PROMPTS_DIR") or self.dir / self.config.prompts)

    @property
    def suite_names(self) -> tuple[str, ...]:
        return tuple(self.config.suites)

    def recordings_path(self, suite: str, prompt_version: str) -> Path:
        """Where ``--record`` keeps one prompt version's model calls (commit it)."""
        return self.dir / "recordings" / suite / f"{prompt_version}.jsonl"

    def suite(self, name: str) -> Suite:
        """The suite, resolved (imports, evaluators, thresholds) on first use."""
        if name not in self.config.suites:
            known = ", ".join(self.suite_names)
            near = difflib.get_close_matches(name, self.suite_names, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise UnknownSuite([f"{self.path} has no suite {name!r} (its suites: {known}){hint}"])
        if name not in self._suites:
            self._suites[name] = _Resolver(self, name).suite()
        return self._suites[name]


class _Resolver:
    """Turns one suite's declaration into a Suite, collecting every problem."""

    def __init__(self, project: Project, name: str):
        self.project, self.name = project, name
        self.config: SuiteConfig = project.config.suites[name]
        self.problems: list[str] = []
        _importable(project.dir)

    def where(self, fieldname: str) -> str:
        return f"{self.project.path}: suite '{self.name}': field '{fieldname}'"

    def problem(self, fieldname: str, message: str) -> None:
        self.problems.append(f"{self.where(fieldname)}: {message}")

    def suite(self) -> Suite:
        c = self.config
        dataset = self.project.dir / c.dataset
        if not dataset.is_dir():
            self.problem("dataset", f"{c.dataset!r}: no such directory ({dataset})")
        make_agent, description, sources = self.agent()
        is_http = isinstance(c.agent, AgentConfig) and c.agent.kind == "http"
        item, run = registry.factories("item"), registry.factories("run")
        evaluators = self.evaluators("evaluators", c.evaluators, item)
        run_evaluators = self.evaluators("run_evaluators", c.run_evaluators, run)
        trace_evaluators = self.evaluators("trace_evaluators", c.trace_evaluators, item)
        validator = self.target("case_validator", c.case_validator) if c.case_validator else None
        thresholds = self.thresholds(dataset, evaluators)
        if c.source is not None:
            sources = tuple(filter(None, (self.source_path(entry) for entry in c.source)))
        if self.problems:
            raise ProjectError(self.problems)
        return Suite(
            name=self.name, dataset_dir=dataset, build_agent=make_agent, evaluators=evaluators,
            thresholds=thresholds, prompt_name=c.prompt, run_evaluators=run_evaluators,
            categories=tuple(c.categories) if c.categories is not None else None,
            absence_categories=tuple(c.absence_categories), validate_case=validator,
            watched_labels=tuple(c.watched_labels), repeats=c.repeats,
            concurrency=c.concurrency,
            agent_version=(_expand(c.version) if c.version else "1") + (
                f"+customer-{customer_version(c.customer.model or '', c.customer.sees)}"
                if c.customer else ""
            ),
            memoize=bool(c.version) or not is_http,
            agent_description=description, trace_name=c.trace_name or "",
            trace_evaluators=trace_evaluators, source_paths=sources,
        )  # fmt: skip

    # --- the agent ---------------------------------------------------------------------
    def agent(self) -> tuple[Callable[..., Agent], str, tuple[Path, ...]]:
        spec = self.config.agent
        agent = spec if isinstance(spec, AgentConfig) else AgentConfig(graph=spec)
        make = partial(build_agent, self.project, self.name, agent, self.config.customer)
        if agent.kind == "http":
            return make, f"http {agent.http}", ()
        path = agent.graph or agent.callable or ""
        target = self.target("agent", path)
        if target is None:
            return make, path, ()
        kind = kind_of(target, explicit="callable" if agent.callable else None)
        if kind is None:
            expected = "a compiled LangGraph graph, a factory(ctx) returning one, or fn(input, ctx)"
            self.problem("agent", f"{path} is a {type(target).__name__}: expected {expected}")
        if kind == "callable" and not isinstance(spec, AgentConfig):
            agent = AgentConfig(callable=path)
            make = partial(build_agent, self.project, self.name, agent, self.config.customer)
        if kind == "callable" and (agent.input_map or agent.state_fields or agent.stepwise):
            self.problem("agent", "input_map, state_fields and stepwise apply to graphs; "
                         f"{path} is a callable fn(input, ctx)")  # fmt: skip
        return make, f"{kind} {path}", _source_of(path)

    def source_path(self, entry: str) -> Path | None:
        """A path relative to the project file, or a package / module name."""
        path = self.project.dir / entry
        if path.exists():
            return path
        try:
            spec = importlib.util.find_spec(entry)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            origin = Path(spec.origin)
            return origin.parent if spec.submodule_search_locations else origin
        self.problem("source", f"{entry!r}: neither a file or directory ({path}) nor a package")
        return None

    def target(self, fieldname: str, path: str) -> Any:
        try:
            return import_target(path)
        except ImportError as exc:
            self.problem(fieldname, str(exc))
            return None

    # --- evaluators --------------------------------------------------------------------
    def evaluators(self, fieldname: str, entries: list[Any], table: Mapping[str, Any]) -> tuple:
        found = []
        for i, entry in enumerate(entries):
            name, params = (entry, None) if isinstance(entry, str) else next(iter(entry.items()))
            if not isinstance(entry, str) and len(entry) != 1:
                self.problem(f"{fieldname}.{i}", "one evaluator per entry: {name: {params}}")
                continue
            made = self.evaluator(f"{fieldname}.{i}", name, params or {}, table,
                                  with_params=params is not None)  # fmt: skip
            if made is not None:
                found.append(made)
        names = [evaluator_name(f) for f in found]
        for duplicate in sorted({n for n in names if names.count(n) > 1}):
            self.problem(fieldname, f"two evaluators are named {duplicate!r}: give one a name")
        return tuple(found)

    def evaluator(self, fieldname: str, name: str, params: dict[str, Any],
                  table: Mapping[str, Any], *, with_params: bool) -> Any:  # fmt: skip
        if ":" in name:
            target = self.target(fieldname, name)
            if target is None:
                return None
            if not callable(target):
                self.problem(fieldname, f"{name} is a {type(target).__name__}, not a function")
                return None
            return self.call(fieldname, name, target, params) if with_params else target
        if name not in table:
            known = ", ".join(sorted(table))
            self.problem(fieldname, f"unknown evaluator {name!r} (built-in: {known}; or "
                         "package.module:function for your own)")  # fmt: skip
            return None
        if name == "llm_judge":
            params = self.judge_params(fieldname, params)
            if params is None:
                return None
        return self.call(fieldname, name, table[name], params)

    def call(self, fieldname: str, name: str, factory: Callable[..., Any],
             params: dict[str, Any]) -> Any:  # fmt: skip
        try:
            inspect.signature(factory).bind(**params)
        except TypeError as exc:
            accepted = ", ".join(inspect.signature(factory).parameters) or "no parameters"
            self.problem(fieldname, f"{name}: {exc} (it takes: {accepted})")
            return None
        try:
            return factory(**params)
        except (TypeError, ValueError) as exc:
            self.problem(fieldname, f"{name}: {exc}")
            return None

    def judge_params(self, fieldname: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """``llm_judge: {rubric, model?, name?}``: the judge model is built from the
        configured endpoint (``model`` names it; offline without an endpoint)."""
        if not isinstance(params.get("rubric"), str):
            self.problem(fieldname, "llm_judge needs a rubric (a string)")
            return None
        temperature = float(params.pop("temperature", 0.0))  # a judge is pinned
        model = pinned_model(LLMSettings.from_env(), params.get("model"), temperature)
        return {**params, "model": model}

    # --- thresholds --------------------------------------------------------------------
    def thresholds(self, dataset: Path, evaluators: tuple) -> Thresholds:
        given = self.config.thresholds
        try:
            if isinstance(given, dict):
                return Thresholds.model_validate(given)
            path = self.project.dir / given if given else dataset / "thresholds.yaml"
            if given or path.exists():
                return load_thresholds(path)
        except (ThresholdsError, ValidationError) as exc:
            self.problem("thresholds", str(exc).replace("\n", " "))
            return Thresholds(primary_metric="?")
        # none declared: the first evaluator is the primary metric, nothing is a floor
        primary = evaluator_name(evaluators[0]) if evaluators else "?"
        return Thresholds(primary_metric=primary)


def build_agent(
    project: Project, suite: str, agent: AgentConfig, customer: CustomerConfig | None,
    prompt: PromptVersion | None, llm: LLMSettings, dataset_dir: Path,
) -> Agent:  # fmt: skip
    """The agent for one run of ``suite`` with ``prompt`` on ``llm`` (factories run here)."""
    ctx = AgentContext(suite=suite, dataset_dir=dataset_dir, settings=llm, prompt_version=prompt)
    simulated = simulated_customer(customer, llm) if customer else None
    if agent.kind == "http":
        return HttpAgent(agent.http or "", ctx, headers=agent.headers, timeout_s=agent.timeout_s,
                         customer=simulated, done_field=agent.done_field)  # fmt: skip
    path = agent.graph or agent.callable or ""
    target = import_target(path)
    if agent.kind == "callable":
        return CallableAgent(target, ctx, target=path, customer=simulated,
                             done_field=agent.done_field)  # fmt: skip
    with serving(ctx):  # a factory that fetches its prompt from Langfuse gets this one
        graph = target if is_graph(target) else _call_factory(target, ctx, path)
    if not is_graph(graph):
        raise AgentBuildError([
            f"{project.path}: suite '{suite}': field 'agent': the factory {path} returned a "
            f"{type(graph).__name__}; expected a compiled LangGraph graph "
            "(StateGraph(...).compile() or create_react_agent(...))"
        ])  # fmt: skip
    stepwise = agent.stepwise
    options = GraphOptions(
        input_map=agent.input_map, state_fields=tuple(agent.state_fields),
        recursion_limit=agent.recursion_limit,
        stepwise=stepwise_spec(stepwise, llm) if stepwise else None,
        done_field=agent.done_field,
        customer=simulated,
        context=agent.context,
    )  # fmt: skip
    return GraphAgent(graph, options, ctx)


def stepwise_spec(config: StepwiseConfig, llm: LLMSettings) -> StepwiseSpec:
    """Teacher-forced steps matched deterministically, or judged by a pinned LLM judge."""
    spec = StepwiseSpec(config.node, config.reference, config.args_mode)
    if config.judge is None:
        return spec
    judge = llm_judge(STEP_RUBRIC, pinned_model(llm, config.judge.model),
                      name="step_similarity")  # fmt: skip
    at = config.judge.pass_at
    return replace(spec, answer_judge=judge_answers(judge, pass_at=at),
                   step_judge=judge_steps(judge, pass_at=at) if config.judge.steps == "all"
                   else None)  # fmt: skip


def simulated_customer(config: CustomerConfig, llm: LLMSettings) -> LLMCustomer:
    """The customer on the run's endpoint (recorded and replayed with the run's calls),
    pinned at temperature 0, on its own model when the suite names one."""
    return LLMCustomer(pinned_model(llm, config.model), config.sees)


def pinned_model(
    settings: LLMSettings, model: str | None, temperature: float = 0.0
) -> BaseChatModel:
    """A chat model on ``settings``' endpoint at a fixed temperature, on ``model`` when given
    (judges and the simulated customer: their answers must not drift between runs)."""
    pinned: dict[str, Any] = {"temperature": temperature}
    if model:
        pinned["model"] = str(model)
    return create_chat_model(settings.model_copy(update=pinned))


def _call_factory(factory: Callable[..., Any], ctx: AgentContext, path: str) -> Any:
    """A factory that accepts ``ctx`` gets it: ``build(ctx)``, ``build(ctx=None)``,
    ``build(*, ctx)`` or one positional parameter of another name; ``build()`` gets none.
    A factory that raises is a setup error naming it (nothing has run)."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        parameters = {}
    named = parameters.get("ctx")
    try:
        if named is not None and named.kind is not inspect.Parameter.POSITIONAL_ONLY:
            return factory(ctx=ctx)
        return factory(ctx) if _required_positional(factory) >= 1 else factory()
    except Exception as exc:
        raise AgentBuildError(
            [
                f"the agent factory {path} raised {type(exc).__name__}: {exc} ({_where(exc)}); "
                "check what it reads from the environment and from ctx (ctx.prompt, ctx.model): "
                "nothing was run"
            ]
        ) from exc


def _where(exc: BaseException) -> str:
    """The file and line an exception was raised at (the innermost frame)."""
    frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    return f"at {frame[0].filename}:{frame[0].lineno}" if frame else "no traceback"


def is_graph(value: Any) -> bool:
    from langgraph.pregel import Pregel

    return isinstance(value, Pregel)


def kind_of(target: Any, *, explicit: str | None = None) -> str | None:
    """ "graph" for a compiled graph or a factory (at most one positional parameter: ctx),
    "callable" for fn(input, ctx) (two or more); None for anything else."""
    if is_graph(target):
        return "graph"
    if not callable(target):
        return None
    if explicit:
        return explicit
    return "callable" if _positional(target, required=False) >= 2 else "graph"


def _required_positional(fn: Callable[..., Any]) -> int:
    return _positional(fn, required=True)


def _positional(fn: Callable[..., Any], *, required: bool) -> int:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 0
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in parameters
               if p.kind in kinds and (not required or p.default is p.empty))  # fmt: skip


def import_target(path: str) -> Any:
    """``package.module:attribute`` (dots after the colon walk attributes)."""
    module_name, _, attribute = path.partition(":")
    try:
        value: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ImportError(
            f"cannot import {path}: {exc} (is the package installed, or next to the project file?)"
        ) from exc
    except Exception as exc:  # the user's module raised while importing
        raise ImportError(
            f"importing {module_name} for {path} raised {type(exc).__name__}: {exc} "
            f"({_where(exc)}); check the module's own imports and the environment variables "
            "it reads when imported"
        ) from exc
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise ImportError(f"cannot import {path}: {module_name} has no attribute {part!r}")
        value = getattr(value, part)
    return value


def _source_of(path: str) -> tuple[Path, ...]:
    """The agent's code, by default: the package of the module ``path`` imports from (or
    that module alone when it is not in a package)."""
    module = sys.modules.get(path.partition(":")[0])
    file = getattr(module, "__file__", None)
    if not file:
        return ()
    path = Path(file).resolve()
    is_package = getattr(module, "__path__", None) is not None
    inside = (path.parent / "__init__.py").exists()
    return (path.parent,) if is_package or inside else (path,)


def _importable(folder: Path) -> None:
    """The project's own packages import without being installed (as with `python -m`)."""
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def _expand(value: str) -> str:
    return os.path.expandvars(value)
