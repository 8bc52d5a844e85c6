"""Load a project file and resolve its suites: imports, adapters, evaluators, thresholds.

Every problem names the file, the suite, the field and the value, and says what to do;
nothing runs until the file is right (the CLI exits 2).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import math
import os
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from eval_pipeline import settings
from eval_pipeline.agents import langgraph_json
from eval_pipeline.agents.adapters.kinds import (
    KINDS,
    AgentKind,
    Build,
    KindConfig,
    kind_of_mapping,
)
from eval_pipeline.agents.context import AgentContext
from eval_pipeline.agents.customer import LLMCustomer, customer_version
from eval_pipeline.agents.langgraph_json import LangGraphJson
from eval_pipeline.agents.project.schema import CustomerConfig, ProjectConfig, SuiteConfig
from eval_pipeline.agents.project_errors import ProjectError, UnknownSuite
from eval_pipeline.agents.targets import import_target, importable, kind_of, where
from eval_pipeline.core.errors import USER_CODE_FAILURES, Terminated
from eval_pipeline.core.prompts.labels import PromptVersion
from eval_pipeline.core.running.agent import Agent
from eval_pipeline.core.scoring.thresholds import Thresholds, ThresholdsError, load_thresholds
from eval_pipeline.core.suites.cases import DatasetError, parse_dataset_ref
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.core.util import safe_yaml
from eval_pipeline.evaluators import registry
from eval_pipeline.evaluators.declare import evaluator_name
from eval_pipeline.llm.factory import pinned_chat_model
from eval_pipeline.llm.model_settings import TEMPERATURE, LLMSettings, SettingsError


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
        raw = safe_yaml.load(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ProjectError([f"{file}: project file not found"]) from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{file}:{mark.line + 1}" if mark else str(file)
        reason = getattr(exc, "problem", None) or exc
        raise ProjectError([f"{at}: malformed YAML: {reason}"]) from None
    try:
        config = ProjectConfig.model_validate(raw or {})
    except ValidationError as exc:
        problems = _schema_problems(file, exc.errors())
        raise ProjectError(problems + _agent_problems(file, raw)) from None
    declared = langgraph_json.find(file.parent)  # (its graphs' code importable first)
    for root in declared.roots if declared else ():
        importable(root)
    if problems := _import_plugins(file, config.plugins) or _agent_problems(file, raw):
        raise ProjectError(problems)
    return Project(file, config, declared)


def _import_plugins(file: Path, modules: list[str]) -> list[str]:
    """Import the project's plugin modules (beside the project file or installed): what
    they register (evaluators, agent kinds, offline behaviours) is then known by name."""
    importable(file.parent)
    problems = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                problems.append(_plugin_raised(file, name, exc))
            else:
                problems.append(f"{file}: field 'plugins': {name!r}: no such module (not beside "
                                f"the project file, not installed)")  # fmt: skip
        except USER_CODE_FAILURES as exc:  # the plugin's own code raised, or exited
            problems.append(_plugin_raised(file, name, exc))
        except KeyboardInterrupt as exc:  # raised by the plugin (was reported as Ctrl-C,
            if isinstance(exc, Terminated):  # 130); a SIGTERM stops the run as ever
                raise
            problems.append(_plugin_raised(file, name, exc))
    return problems


def _plugin_raised(file: Path, name: str, exc: BaseException) -> str:
    return (f"{file}: field 'plugins': importing {name!r} raised {type(exc).__name__}: {exc} "
            f"({where(exc)}); fix the module (nothing was run)")  # fmt: skip


def _agent_problems(file: Path, raw: Any) -> list[str]:
    """Each suite's ``agent:`` mapping checked by its kind's Config (adapters/kinds.py),
    with the rest of the file, so every problem is listed at once."""
    suites = raw.get("suites") if isinstance(raw, dict) else None
    problems: list[str] = []
    for name, suite in (suites or {}).items() if isinstance(suites, dict) else ():
        agent = suite.get("agent") if isinstance(suite, dict) else None
        if not isinstance(agent, dict):
            continue
        kind, why = kind_of_mapping(agent)
        if kind is None:
            problems.append(f"{file}: suite '{name}': field 'agent': {why}")
            continue
        try:
            kind.Config.model_validate(agent)
        except ValidationError as exc:
            located = [{**e, "loc": ("suites", name, "agent", *e["loc"])} for e in exc.errors()]
            problems += _schema_problems(file, located, agent=kind.Config)
    return problems


def _schema_problems(
    file: Path, errors: list[Any], *, agent: type[BaseModel] | None = None
) -> list[str]:
    """Each validation error in the user's words: the suite, the field's path as written in
    the file (never pydantic's union and validator names), what is wrong, the value, and a
    near field name for a misspelled one. ``agent``: the kind's Config, for errors of
    ``agent:`` (their locations start with it)."""
    problems = []
    for err in errors:
        loc = [str(p) for p in err["loc"]]
        if loc[:1] == ["suites"] and len(loc) >= 2:
            head, rest = f"suite '{loc[1]}'", loc[2:]
        else:
            head, rest = "project", loc
        other_form = err["type"] in ("string_type", "dict_type") and rest[:1] == ["agent"]
        if other_form and isinstance(err.get("input"), str | dict):
            continue  # `agent:` written in one form: the error of its other form
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
            near = difflib.get_close_matches(path[-1], _fields_at(head, path[:-1], agent), n=1)
            hint = _other_kinds(path) or (f"; did you mean {near[0]!r}?" if near else "")
        problems.append(f"{file}: {head}: field '{fieldname}': {message}{got}{hint}")
    return list(dict.fromkeys(problems))


# Parts of pydantic's error locations that name its machinery, not the user's fields:
# a union member ("str", "dict[str,any]"), a validator ("function-after[…]").
_INTERNAL = re.compile(r"^(str|int|float|bool|dict\[.*|list\[.*|function-\w+\[.*|[A-Z]\w*Config)$")


def _fields_at(head: str, parents: list[str], agent: type[BaseModel] | None) -> list[str]:
    """The field names allowed where an unknown one was written."""
    model: Any = ProjectConfig if head == "project" else SuiteConfig
    if parents[:1] == ["agent"] and agent is not None:
        model, parents = agent, parents[1:]
    for part in parents:
        field = model.model_fields.get(part)
        nested = [a for a in typing.get_args(field.annotation)] if field else []
        nested = [t for t in nested or [field.annotation if field else None]
                  if isinstance(t, type) and issubclass(t, BaseModel)]  # fmt: skip
        if not nested:
            return []
        model = nested[0]
    return list(model.model_fields)


def _other_kinds(path: list[str]) -> str:
    """For an agent field of another kind (``input_map`` on an http agent): whose it is."""
    if len(path) != 2 or path[0] != "agent":
        return ""
    owners = [k.key for k in KINDS.values() if path[1] in k.Config.model_fields]
    return f"; it is a field of {' and '.join(owners)} agents" if owners else ""


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Project:
    path: Path
    config: ProjectConfig
    langgraph: LangGraphJson | None = None  # langgraph.json beside the project file
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
        self.thresholds_origin = ""  # where the thresholds were written (``thresholds``)
        importable(project.dir)

    def where(self, fieldname: str) -> str:
        return f"{self.project.path}: suite '{self.name}': field '{fieldname}'"

    def problem(self, fieldname: str, message: str) -> None:
        self.problems.append(f"{self.where(fieldname)}: {message}")

    def suite(self) -> Suite:
        c = self.config
        try:
            ref = parse_dataset_ref(c.dataset)
        except DatasetError as exc:
            ref = None
            self.problem("dataset", "; ".join(exc.problems))
        dataset = self.project.dir if ref else self.project.dir / c.dataset
        if ref is None and not dataset.is_dir():
            self.problem("dataset", f"{c.dataset!r}: no such directory ({dataset})")
        make_agent, description, sources, kind = self.agent()
        item, run = registry.factories("item"), registry.factories("run")
        evaluators = self.evaluators("evaluators", c.evaluators, item)
        run_evaluators = self.evaluators("run_evaluators", c.run_evaluators, run)
        trace_evaluators = self.evaluators("trace_evaluators", c.trace_evaluators, item)
        validator = self.target("case_validator", c.case_validator) if c.case_validator else None
        thresholds = self.thresholds(dataset, evaluators, trace_evaluators)
        self.absence_categories()
        version = self.version()
        if c.source is not None:
            sources = tuple(filter(None, (self.source_path(entry) for entry in c.source)))
        if self.problems or make_agent is None:  # (no agent: a problem says why)
            raise ProjectError(self.problems)
        return Suite(
            name=self.name, dataset_dir=dataset, dataset_ref=ref, build_agent=make_agent,
            evaluators=evaluators,
            thresholds=thresholds, thresholds_origin=self.thresholds_origin,
            prompt_name=c.prompt, run_evaluators=run_evaluators,
            categories=tuple(c.categories) if c.categories is not None else None,
            absence_categories=tuple(c.absence_categories), validate_case=validator,
            watched_labels=tuple(c.watched_labels), repeats=c.repeats,
            concurrency=c.concurrency,
            agent_version=(version or "1") + (
                f"+customer-{customer_version(c.customer.model or '', c.customer.sees)}"
                if c.customer else ""
            ),
            memoize=bool(c.version) or (kind is not None and kind.memoize_unversioned),
            prompt_read_when_built=kind is not None and kind.prompt_read_when_built,
            agent_description=description, trace_name=c.trace_name or "",
            trace_evaluators=trace_evaluators, source_paths=sources,
        )  # fmt: skip

    def version(self) -> str | None:
        """The agent's own version, ``${VAR}`` read from the environment. An unset variable
        stayed ``${VAR}`` (os.path.expandvars), one version for every deployment: the memo
        then reused the outputs of another build."""
        if not self.config.version:
            return None
        unset = sorted(set(re.findall(r"\$\{(\w+)\}", self.config.version)) - set(os.environ))
        if unset:
            self.problem("version", f"{self.config.version!r} names {', '.join(unset)}, which "
                         "is not set in the environment; set it, or write the version itself")
        return os.path.expandvars(self.config.version)

    def absence_categories(self) -> None:
        """Each absence category one of the suite's declared categories (when it declares
        them; else the golden_dataset's absence_coverage check names one no case has)."""
        declared = self.config.categories
        if declared is None:
            return
        for i, category in enumerate(self.config.absence_categories):
            if category not in declared:
                near = difflib.get_close_matches(category, declared, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                self.problem(f"absence_categories.{i}", f"{category!r} is not one of the "
                             f"suite's categories ({', '.join(declared)}){hint}")  # fmt: skip

    # --- the agent ---------------------------------------------------------------------
    def agent(self) -> tuple[Callable[..., Agent] | None, str, tuple[Path, ...], AgentKind | None]:
        """The suite's ``agent:``, checked by its kind (adapters/kinds.py): how to build it,
        what it is, its code and its kind. The short form (an import path) is a graph or a
        callable, by what it imports."""
        raw = self.config.agent
        if isinstance(raw, str):
            target = self.target("agent", raw)
            if target is None:
                return None, raw, (), None
            found = kind_of(target)
            if found is None:
                expected = "a compiled LangGraph graph, a factory(ctx) returning one, or " \
                           "fn(input, ctx)"  # fmt: skip
                self.problem("agent", f"{raw} is a {type(target).__name__}: expected {expected}")
                return None, raw, (), None
            raw = {found: raw}
        kind, why = kind_of_mapping(raw)
        if kind is None:  # (a mapping was checked when the project loaded)
            self.problem("agent", why)
            return None, "", (), None
        config = kind.Config.model_validate(raw)
        description, sources = kind.describe(config, self)
        make = partial(build_agent, self.project, self.name, kind, config, self.config.customer)
        return make, description, sources, kind

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
            judged = self.judge_params(fieldname, params)
            if judged is None:
                return None
            params = judged
        return self.call(fieldname, name, table[name], params)

    def call(self, fieldname: str, name: str, factory: Callable[..., Any],
             params: dict[str, Any]) -> Any:  # fmt: skip
        try:
            inspect.signature(factory).bind(**params)
        except TypeError as exc:
            accepted = ", ".join(inspect.signature(factory).parameters) or "no parameters"
            self.problem(fieldname, f"{name}: {exc} (it takes: {accepted})")
            return None
        problems = typed_params(factory, params)
        for problem in problems:
            self.problem(fieldname, f"{name}: {problem}")
        if problems:
            return None
        try:
            return factory(**params)
        except USER_CODE_FAILURES as exc:  # the factory's own code raised (or exited)
            self.problem(fieldname, f"{name}{params or ''}: its factory raised "
                                    f"{type(exc).__name__}: {exc} ({where(exc)})")  # fmt: skip
            return None

    def judge_params(self, fieldname: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """``llm_judge: {rubric, model?, name?}``: the judge model is built from the
        configured endpoint (``model`` names it; offline without an endpoint)."""
        if not isinstance(params.get("rubric"), str):
            self.problem(fieldname, "llm_judge needs a rubric (a string)")
            return None
        try:  # a judge is pinned: temperature 0 unless the entry says otherwise
            temperature = TEMPERATURE(params.pop("temperature", 0.0), "temperature")
        except SettingsError as exc:
            self.problem(fieldname, f"llm_judge: {exc}")
            return None
        model = pinned_chat_model(LLMSettings.from_env(), params.get("model"), temperature)
        return {**params, "model": model}

    # --- thresholds --------------------------------------------------------------------
    def thresholds(self, dataset: Path, evaluators: tuple, trace_evaluators: tuple) -> Thresholds:
        given = self.config.thresholds
        try:
            if isinstance(given, dict):
                found = Thresholds.model_validate(given)
                self.metric_names(found, "the project file", evaluators, trace_evaluators)
                self.thresholds_origin = f"{self.where('thresholds')} (inline)"
                return found
            path = self.project.dir / given if given else dataset / "thresholds.yaml"
            if given or path.exists():
                found = load_thresholds(path)
                self.metric_names(found, str(path), evaluators, trace_evaluators)
                self.thresholds_origin = str(path)
                return found
        except (ThresholdsError, ValidationError) as exc:
            self.problem("thresholds", str(exc).replace("\n", " "))
            return Thresholds(primary_metric="?")
        # none declared: the first evaluator is the primary metric, nothing is a floor
        primary = evaluator_name(evaluators[0]) if evaluators else "?"
        return Thresholds(primary_metric=primary)

    def metric_names(self, thresholds: Thresholds, where: str, evaluators: tuple,
                     trace_evaluators: tuple) -> None:  # fmt: skip
        """Every metric the thresholds name is one of the suite's evaluators: a misspelt
        gated metric would give pairs of 0 − 0 (NOT WORSE, a pass nothing tested), a
        misspelt floor a "regression" that is a typo. Each unknown one is a problem naming
        the file, the field, the value and the nearest name; so is a category floor for a
        category the suite does not declare (it would floor nothing)."""
        known = [evaluator_name(f) for f in evaluators]
        traced = [evaluator_name(f) for f in trace_evaluators]
        regression = thresholds.regression
        named = [
            ("primary_metric", [thresholds.primary_metric], known),
            ("min_mean", list(thresholds.min_mean), known),
            ("all_items_pass", thresholds.all_items_pass, known),
            ("category_floors", list(thresholds.category_floors), known),
            ("regression.metrics", regression.metrics or [], known),
            ("regression.binary_metrics", regression.binary_metrics or [], known),
            ("categories", list(thresholds.categories), known),
            ("traces.floors", list(thresholds.traces.floors), traced),
        ]
        for field_, values, names in named:
            for value in values:
                if value in names:
                    continue
                near = difflib.get_close_matches(value, names, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                listed = ", ".join(names) or "none"
                self.problem("thresholds", f"{where}: field {field_!r}: {value!r} is not a "
                             f"metric of the suite (its evaluators: {listed}){hint}")  # fmt: skip
        declared = self.config.categories
        if declared is None:  # (none declared: any category will do)
            return
        for metric, floors in thresholds.category_floors.items():
            for category in floors:
                if category not in declared:
                    near = difflib.get_close_matches(category, declared, n=1)
                    hint = f"; did you mean {near[0]!r}?" if near else ""
                    self.problem("thresholds", f"{where}: field 'category_floors.{metric}': "
                                 f"{category!r} is not one of the suite's categories "
                                 f"({', '.join(declared)}){hint}")  # fmt: skip


def build_agent(
    project: Project, suite: str, kind: AgentKind, config: KindConfig,
    customer: CustomerConfig | None, prompt: PromptVersion | None, llm: LLMSettings,
    dataset_dir: Path,
) -> Agent:  # fmt: skip
    """The agent for one run of ``suite`` with ``prompt`` on ``llm`` (factories run here)."""
    ctx = AgentContext(suite=suite, dataset_dir=dataset_dir, settings=llm, prompt_version=prompt)
    simulated = simulated_customer(customer, llm) if customer else None
    return kind.build(config, Build(project.path, suite, ctx, simulated, llm,
                                    project.langgraph))


def simulated_customer(config: CustomerConfig, llm: LLMSettings) -> LLMCustomer:
    """The customer on the run's endpoint (recorded and replayed with the run's calls),
    pinned at temperature 0, on its own model when the suite names one."""
    return LLMCustomer(pinned_chat_model(llm, config.model), config.sees)


def typed_params(factory: Callable[..., Any], params: dict[str, Any]) -> list[str]:
    """Each parameter a factory annotates, checked against its type (pydantic's lax mode:
    "5000" is a float, "abc" is not) and, for a number, finite; ``params`` takes the
    converted values. ``latency_within: {budget_ms: abc}`` was accepted, and then every
    item's score was an error."""
    try:
        hints = typing.get_type_hints(factory)
    except Exception:  # annotations that do not resolve: nothing to check them against
        return []
    problems = []
    for key, value in params.items():
        if key not in hints:
            continue
        try:
            adapter = TypeAdapter(hints[key])
        except Exception:  # a type pydantic cannot check (a protocol, a class of its own)
            continue
        try:
            converted = adapter.validate_python(value)
        except ValidationError as exc:
            wanted = exc.errors()[0]["msg"].lower()
            problems.append(f"{key}={value!r}: {wanted}")
            continue
        if isinstance(converted, float) and not math.isfinite(converted):
            problems.append(f"{key}={value!r}: must be a finite number")
            continue
        params[key] = converted
    return problems
