"""`eval-pipeline init`: declare a suite for a team's own agent, with files to start from.

Writes (never overwrites): the suite's entry in eval-pipeline.yaml (the file is created when
there is none), ``<dataset>/cases.yaml`` with three example cases and
``<dataset>/thresholds.yaml``. The agent is imported first: a path that does not import, or
names something that is not an agent, writes nothing.

With ``--prompt NAME``, a prompt the registry does not have yet gets version 1, labelled
``production``: the agent's own system prompt when its module holds one (its one
``…_PROMPT`` string; among several, the one named after the prompt or the suite, else
``SYSTEM_PROMPT``, else the user says which with ``--prompt-from``), else a placeholder to
edit; so the command init prints next runs as printed. A prompt the registry has is left as
it is.
"""

from __future__ import annotations

import os
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import click
import yaml

from eval_pipeline import settings
from eval_pipeline.agents import langgraph_json
from eval_pipeline.agents.langgraph_json import LangGraphJson
from eval_pipeline.agents.project.schema import SUITE_NAME
from eval_pipeline.agents.targets import IMPORT_PATH, import_target, importable, kind_of
from eval_pipeline.cli.report import console
from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.suites.placeholders import EXAMPLES
from eval_pipeline.core.util import safe_yaml

HEADER = """\
# eval-pipeline project: the suites of your agents (eval-pipeline's docs/own-agent.md).
# Paths are relative to this file.
prompts: prompts

suites:
"""

SUITE_ENTRY = """\
  {name}:
    agent: {agent}{prompt}
    dataset: {dataset}
    evaluators:            # built-in names, with parameters, or package.module:function
      - groundedness       # answered from a tool, not from memory (metadata.criteria)
      - correctness        # called every tool in expected_output.expected_tools
      - completeness       # the answer names every expected_output.expected_fields
      - overall            # 0.4 groundedness + 0.4 correctness + 0.2 completeness
    thresholds: {dataset}/thresholds.yaml
"""

CASES = """\
# Golden cases of the {name} suite: replace these three with real requests your agent gets
# (ten or more), each with what a right answer does. A run on these three is never the
# suite's baseline. Case format: eval-pipeline's docs/cases.md.
- id: {name}-{ids[0]}
  input: {{message: "{messages[0]}"}}
  expected_output:
    expected_tools: []        # the tools it must call, e.g. {tool_hint}
    expected_fields: []       # words the answer must contain, e.g. [price]
  metadata: {{category: example, difficulty: easy, tier: smoke}}
- id: {name}-{ids[1]}
  input: {{message: "{messages[1]}"}}
  expected_output: {{expected_tools: [], expected_fields: []}}
  metadata: {{category: example, difficulty: medium, tier: smoke}}
- id: {name}-{ids[2]}
  input: {{message: "{messages[2]}"}}
  expected_output: {{expected_tools: [], expected_fields: []}}
  metadata:
    category: chit_chat
    difficulty: easy
    tier: full
    criteria: {{grounded: false}}   # small talk needs no tool
"""

THRESHOLDS = """\
# Gates of the {name} suite (eval-pipeline's docs/gate.md).
primary_metric: overall
min_mean:
  overall: 0.70          # blocking: the run fails below this mean
regression:
  baseline_label: production
  margin: {margin}            # {comment}
  pass_threshold: 0.7    # a case passes at overall >= 0.7
"""
# The margin init writes: one a first suite of a few dozen real cases can decide with a case
# or two that flip (core/scoring/margins.py; the examples' suites of 32 use it too).
MARGIN = 0.2


class ScaffoldError(ConfigurationError):
    """init cannot write the suite; nothing was written."""


PLACEHOLDER = ("You are a helpful assistant. (A placeholder written by eval-pipeline init: "
               "replace it with your agent's system prompt.)")  # fmt: skip


@dataclass
class Scaffolded:
    agent_kind: str
    cases_file: Path
    written: list[Path] = field(default_factory=list)
    prompt_note: str = ""  # what init did about --prompt
    margin_note: str = ""  # what the margin it wrote needs
    notes: list[str] = field(default_factory=list)  # langgraph.json, the agent's endpoint


def scaffold_suite(
    agent: str, name: str, *, dataset_dir: str | None = None, prompt: str | None = None,
    prompt_from: str | None = None,
) -> Scaffolded:  # fmt: skip
    if not SUITE_NAME.match(name):
        raise ScaffoldError(f"--name {name!r}: use letters, digits, '_' and '-' (at most 64)")
    project = settings.project_file() or Path.cwd() / settings.PROJECT_FILE
    graphs = _langgraph(project)
    if graphs is not None and agent in graphs.graphs:  # a graph's id in langgraph.json
        agent = graphs.graphs[agent]
    kind, target, declared = _agent(agent, project)
    existing = _suites(project)
    if name in existing:
        raise ScaffoldError(f"{project}: suite {name!r} is already declared")
    dataset = dataset_dir or f"evals/{name}"
    folder = project.parent / dataset
    cases, thresholds = folder / "cases.yaml", folder / "thresholds.yaml"
    for path in (cases, thresholds):
        if path.exists():
            raise ScaffoldError(f"{path} already exists: choose another --dataset")
    entry = SUITE_ENTRY.format(
        name=name, agent=declared, dataset=dataset,
        prompt=f"\n    prompt: {prompt}" if prompt else "",
    )  # fmt: skip
    entry = entry.replace("agent: \n", "agent:\n")  # (the mapping form: no trailing space)
    text = (project.read_text(encoding="utf-8") if project.exists() else HEADER).rstrip("\n")
    updated = text + "\n" + entry
    if name not in _suites_of(updated, project):
        raise ScaffoldError(
            f"{project}: could not add the suite at the end of the file (is 'suites:' the last "
            f"section?); add this entry under suites: yourself:\n{entry}"
        )
    if prompt_from and not prompt:
        raise ScaffoldError("--prompt-from names the text of a prompt: give --prompt NAME too")
    note = _seed_prompt(project, prompt, agent, name, prompt_from) if prompt else ""
    if prompt and target is not None:
        note += "\n" + _reading_note(target)
    folder.mkdir(parents=True, exist_ok=True)
    ids, messages = zip(*EXAMPLES, strict=True)
    cases.write_text(CASES.format(name=name, tool_hint=_tool_hint(target), ids=ids,
                                  messages=messages), encoding="utf-8")  # fmt: skip
    margin = _margin_note()
    thresholds.write_text(THRESHOLDS.format(name=name, **margin), encoding="utf-8")
    project.write_text(updated, encoding="utf-8")
    notes = [_langgraph_note(graphs, agent)] if graphs is not None else []
    if kind != "http":
        notes.append(_endpoint_note(project, name, target))
    if ignored := _ignore_eval_home(project.parent):
        notes.append(ignored)
    return Scaffolded(kind, cases, [project, cases, thresholds], note, margin["advice"], notes)


def _langgraph_note(graphs: LangGraphJson, agent: str) -> str:
    """What init took from langgraph.json, and what each item will get from it."""
    graph = graphs.graph_id(agent)
    store = "a fresh in-memory store" + (
        f" (index {graphs.index.embed}, {graphs.index.dims} dims)" if graphs.index else "")
    saver = " and checkpointer" if graphs.checkpointer else ""
    env = f"; its env ({len(graphs.env)} variable(s)) is set for the agent" if graphs.env else ""
    said = f"graph {graph!r} is {agent}; " if graph else ""
    return f"{graphs.path}: {said}each item gets {store}{saver}{env}"


def _endpoint_note(project: Path, suite: str, target: object) -> str:
    """Where the agent's own model clients will send their requests, probed (doctor's
    ``agent endpoint`` check, for the suite just written)."""
    from eval_pipeline.agents.project import load_project
    from eval_pipeline.agents.project_errors import ProjectError
    from eval_pipeline.cli.doctor import agent_endpoint_finding, suite_context_model
    from eval_pipeline.llm.model_settings import LLMSettings

    try:
        loaded = load_project(project)
    except ProjectError as exc:  # (another suite's problem: run and doctor will say it)
        return f"the agent's endpoint: not told, the project does not load: {exc.problems[0]}"
    declared = loaded.langgraph.env if loaded.langgraph else {}
    model = suite_context_model(loaded, suite)
    found = agent_endpoint_finding(LLMSettings.from_env(), declared,
                                   {suite: model} if model else {})  # fmt: skip
    return found.detail if found.ok else f"{found.detail} (to fix: {found.fix})"


def _ignore_eval_home(folder: Path) -> str:
    """``.eval_home/`` (the results store, Dagster's instance: each machine's own) in the
    project's .gitignore: created, or appended to once; nothing when a line ignores it."""
    ignore = folder / ".gitignore"
    text = ignore.read_text(encoding="utf-8") if ignore.exists() else ""
    if any(line.strip() in {".eval_home", ".eval_home/", "/.eval_home", "/.eval_home/"}
           for line in text.splitlines()):  # fmt: skip
        return ""
    gap = "\n" if text and not text.endswith("\n") else ""
    ignore.write_text(f"{text}{gap}.eval_home/\n", encoding="utf-8")
    if text:
        return f"added .eval_home/ to {ignore} (each machine's results store, never committed)"
    return f"wrote {ignore}: .eval_home/ (each machine's results store, never committed)"


def _reading_note(target: object) -> str:
    """Whether prompt versions reach the agent: through ``ctx.system_prompt()``, or the
    ``system_prompt`` field of a graph's context schema (a run puts the version under test
    there); a graph built at import without one is never handed a version."""
    from eval_pipeline.agents.adapters.graph import context_fields
    from eval_pipeline.agents.targets import is_graph

    schema = getattr(target, "context_schema", None) if is_graph(target) else None
    if schema is not None and "system_prompt" in context_fields(schema):
        return (f"the graph reads {getattr(schema, '__name__', 'its context')}.system_prompt: "
                "each run puts the prompt version under test there")  # fmt: skip
    must = "for prompt versions to make any difference, the agent must read the one under test"
    if not is_graph(target):
        return (f"{must}: ctx.system_prompt() in build(ctx) or fn(input, ctx), not the "
                "constant (a run of an agent that never reads it says so)")  # fmt: skip
    return (f"{must}: this graph is built at import with no Context.system_prompt, so it is "
            "never handed one; point agent: at a factory build(ctx) that builds it with "
            "ctx.system_prompt() (docs/own-agent.md#what-agent-can-point-at); a run of it "
            "says it never read it")


def _margin_note() -> dict[str, str]:
    """The margin init writes, how many cases gate it (core/scoring/margins.py: half of
    them decide it when nothing moved, so a case or two may flip) and the finer margins
    more cases decide: the thresholds file's comment and init's advice."""
    from eval_pipeline.core.scoring.margins import cases_for_margin, table
    from eval_pipeline.core.scoring.sequential import pairs_to_clear

    alpha = 0.05  # (the thresholds file's default α)
    finer = ", ".join(f"{n} → {m}" for n, _, m in table(alpha, (47, 68, 100, 200)))
    cases, tied = cases_for_margin(MARGIN, alpha), pairs_to_clear(MARGIN, alpha)
    advice = (f"{cases} cases gate it ({tied} when nothing moved), the three examples "
              f"cannot: add cases; more cases, a finer margin: {finer} "
              "(docs/gate.md#choosing-a-margin; eval-pipeline doctor prints your suite's)")
    said = f"a drop smaller than this is not a regression; {advice}"
    comment = ("\n" + " " * 25 + "# ").join(textwrap.wrap(said, 70))  # (under the margin)
    return {"margin": f"{MARGIN}", "comment": comment, "advice": advice}


def _seed_prompt(project: Path, name: str, agent: str, suite: str,
                 prompt_from: str | None) -> str:  # fmt: skip
    """Version 1 of ``name`` labelled production, unless the registry has the prompt."""
    from eval_pipeline.core.prompts.labels import PromptError
    from eval_pipeline.integrations.prompt_registry import RegistryUnavailable
    from eval_pipeline.integrations.services import Services

    prompts = _suites_file_prompts(project)
    registry = Services.from_env(project.parent / prompts).registry()
    try:
        existing = registry.get_by_label(name, "production")
        return f"prompt {name}: the registry's production version (v{existing.version})"
    except PromptError:
        pass
    found = _agent_prompt(agent, name, suite, prompt_from)
    try:
        made = registry.create(name, found[1] if found else PLACEHOLDER, "production")
    except (PromptError, RegistryUnavailable) as exc:
        raise ScaffoldError(f"--prompt {name}: {exc}") from exc
    where = registry.description
    if found:
        return (f"prompt {name}: created v{made.version} in {where} from {found[0]}, "
                "labelled production")  # fmt: skip
    return (f"prompt {name}: created v{made.version} in {where} labelled production, with a "
            f"PLACEHOLDER text: put your agent's system prompt there (eval-pipeline prompts "
            f"add {name} FILE --label production)")  # fmt: skip


def _agent_prompt(agent: str, name: str, suite: str,
                  prompt_from: str | None) -> tuple[str, str] | None:  # fmt: skip
    """(where, text) of the prompt ``name``'s first version: ``prompt_from``'s constant when
    given; else the one ``…_PROMPT`` string of the agent's module (or its package), or,
    among several, the one named after the prompt or the suite (``SUPERVISOR_PROMPT`` for
    ``shopdesk/supervisor``), else ``SYSTEM_PROMPT``. Several and none of these: which one
    is the user's to say (``--prompt-from``), and nothing is written."""
    if prompt_from:
        try:
            value = import_target(prompt_from)
        except ImportError as exc:
            raise ScaffoldError(f"--prompt-from {prompt_from}: {exc}") from None
        if not isinstance(value, str) or not value.strip():
            raise ScaffoldError(f"--prompt-from {prompt_from}: a {type(value).__name__}, not "
                                "the text of a prompt")  # fmt: skip
        return prompt_from, value
    module_name = agent.partition(":")[0]
    if module_name not in sys.modules:  # an agent service: its prompt is its own
        return None
    package = module_name.partition(".")[0]
    modules = [sys.modules[module_name]] + [m for n, m in sorted(sys.modules.items())
                                            if n.startswith(f"{package}.") and m is not None
                                            and n != module_name]  # fmt: skip
    found: dict[str, tuple[str, str]] = {}  # where → (constant, text)
    for module in modules:
        for key, value in vars(module).items():
            if key.endswith("_PROMPT") and isinstance(value, str) and value.strip():
                found.setdefault(f"{module.__name__}:{key}", (key, value))
    if len(found) <= 1:
        return next(((where, text) for where, (_, text) in found.items()), None)
    wanted = {name.rsplit("/", 1)[-1], suite}
    wanted = {w.lower().replace("-", "_") for w in wanted}
    for rule in (lambda key: key.lower().removesuffix("_prompt") in wanted,
                 lambda key: key == "SYSTEM_PROMPT"):  # fmt: skip
        chosen = [(where, text) for where, (key, text) in found.items() if rule(key)]
        if len(chosen) == 1:
            return chosen[0]
    listed = ", ".join(found)
    raise ScaffoldError(f"--prompt {name}: the agent's modules hold {len(found)} prompt "
                        f"constants ({listed}) and none is named after the prompt or the "
                        "suite: say which is its text with --prompt-from MODULE:CONSTANT "
                        "(nothing was written)")  # fmt: skip


def _suites_file_prompts(project: Path) -> str:
    """The project file's ``prompts:`` folder (default prompts)."""
    if not project.exists():
        return "prompts"
    data = safe_yaml.load(project.read_text(encoding="utf-8")) or {}
    return str(data.get("prompts") or "prompts") if isinstance(data, dict) else "prompts"


def _agent(agent: str, project: Path) -> tuple[str, object, str]:
    """(kind, the imported object, what `agent:` says) for --agent; nothing is written
    when it does not import or is not an agent."""
    if agent.startswith(("http://", "https://")):
        return (
            "http",
            None,
            f"{{http: {agent}}}\n    # version: 1.0.0   # set it, and unchanged items are reused",
        )
    importable(project.parent)
    declared = _langgraph(project)
    if not IMPORT_PATH.match(agent):
        ids = f", or one of langgraph.json's graphs ({', '.join(declared.graphs)})" if (
            declared) else ""  # fmt: skip
        raise ScaffoldError(f"--agent {agent!r}: write package.module:attribute or an http "
                            f"URL{ids}")  # fmt: skip
    try:
        target = import_target(agent)
    except ImportError as exc:
        raise ScaffoldError(f"--agent: {exc}") from exc
    kind = kind_of(target)
    if kind is None:
        raise ScaffoldError(
            f"--agent {agent} is a {type(target).__name__}: expected a compiled LangGraph "
            "graph, a factory(ctx) returning one, or fn(input, ctx) -> dict"
        )
    if (model := _context_model(target)) is not None:
        return kind, target, (f"\n      graph: {agent}\n      context: {{model: {model}}}   "
                              f"# {CONTEXT_MODEL_NOTE}")  # fmt: skip
    return kind, target, agent


CONTEXT_MODEL_NOTE = ("the graph's own model (its Context.model): its client calls "
                      "OPENAI_BASE_URL (docs/own-agent.md#the-agents-own-model-endpoint)")


def _langgraph(project: Path) -> LangGraphJson | None:
    """The langgraph.json beside the project file, its graphs' code made importable."""
    from eval_pipeline.agents.project_errors import ProjectError

    try:
        declared = langgraph_json.find(project.parent)
    except ProjectError as exc:
        raise ScaffoldError("; ".join(exc.problems)) from exc
    for root in declared.roots if declared else ():
        importable(root)
    return declared


def _context_model(target: object) -> str | None:
    """For a graph whose context names its model (LangChain's templates' ``Context.model``,
    built with ``init_chat_model``): the model to write into ``agent.context``, EVAL_LLM_MODEL's
    on the OpenAI-compatible endpoint (the template's default often names another
    provider)."""
    from eval_pipeline.agents.adapters.graph import context_model

    default = context_model(target)
    if default is None:
        return None
    separator = "/" if "/" in default.split(":")[0] else ":"
    return f"openai{separator}{os.environ.get('EVAL_LLM_MODEL') or 'gpt-4o-mini'}"


def _suites(project: Path) -> dict:
    if not project.exists():
        return {}
    return _suites_of(project.read_text(encoding="utf-8"), project)


def _suites_of(text: str, project: Path) -> dict:
    try:
        data = safe_yaml.load(text) or {}
    except yaml.YAMLError as exc:
        raise ScaffoldError(f"{project}: malformed YAML: {exc}") from exc
    suites = data.get("suites") if isinstance(data, dict) else None
    return suites if isinstance(suites, dict) else {}


def _tool_hint(target: object) -> str:
    """The tool names of a compiled graph's tool nodes, as a hint for the example case."""
    nodes = getattr(target, "nodes", None) or {}
    names = []
    for node in nodes.values():
        bound = getattr(node, "bound", None)
        names += sorted(getattr(bound, "tools_by_name", None) or {})
    return f"[{', '.join(names[:2])}]" if names else "[search_orders]"


@click.command()
@click.option("--agent", "agent_path", required=True, metavar="PACKAGE.MODULE:ATTRIBUTE|URL",
              help="Your agent: a compiled LangGraph graph, a factory(ctx) returning one, "
                   "fn(input, ctx) -> dict, or the http(s) URL of an agent service.")  # fmt: skip
@click.option("--name", required=True, help="The suite's name (letters, digits, _ and -).")
@click.option("--dataset", "dataset_dir", default=None, metavar="DIR",
              help="Where the cases go, relative to the project file "
                   "(default evals/NAME).")  # fmt: skip
@click.option("--prompt", "prompt_name", default=None,
              help="The prompt in the registry the agent reads (optional).")  # fmt: skip
@click.option("--prompt-from", "prompt_from", default=None, metavar="MODULE:CONSTANT",
              help="The constant whose text is the new prompt's first version (when the "
                   "agent holds several …_PROMPT strings).")  # fmt: skip
def init(agent_path: str, name: str, dataset_dir: str | None, prompt_name: str | None,
         prompt_from: str | None) -> None:  # fmt: skip
    """Declare a suite for your agent: its entry in eval-pipeline.yaml (created if there is
    none), a dataset directory with three example cases and a thresholds file."""
    made = scaffold_suite(agent_path, name, dataset_dir=dataset_dir, prompt=prompt_name,
                          prompt_from=prompt_from)  # fmt: skip
    for path in made.written:
        console.print(f"wrote {path}")
    if made.prompt_note:
        console.print(made.prompt_note)
    console.print(f"margin {MARGIN} in {made.written[-1].name}: {made.margin_note}")
    for note in made.notes:
        console.print(note)
    console.print(f"Suite {name!r}: {made.agent_kind} {agent_path}. Next: put real cases in "
                  f"{made.cases_file}, then\n  eval-pipeline run --suite {name}")  # fmt: skip
