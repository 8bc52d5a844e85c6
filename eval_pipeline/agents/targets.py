"""What ``package.module:attribute`` names in a project file: importing it, telling a
graph (or a factory of one) from a callable ``fn(input, ctx)``, calling a factory with
``ctx``, and the code that is the agent's version."""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import sysconfig
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator

from eval_pipeline.agents.context import AgentContext
from eval_pipeline.agents.project_errors import AgentBuildError
from eval_pipeline.core.errors import USER_CODE_FAILURES

# Python's own library and the installed packages: code that is not the user's.
LIBRARY = tuple({sysconfig.get_path(key) for key in ("stdlib", "platstdlib", "purelib",
                                                     "platlib")})  # fmt: skip
IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def check_import_path(value: str) -> str:
    if not IMPORT_PATH.match(value):
        raise ValueError(f"{value!r} is not an import path: write package.module:attribute")
    return value


# A project-file field that names ``package.module:attribute`` (checked when it loads).
ImportPath = Annotated[str, AfterValidator(check_import_path)]


def invoke_factory(factory: Callable[..., Any], ctx: AgentContext) -> Any:
    """``factory`` called as it accepts ``ctx``: ``build(ctx)``, ``build(ctx=None)``,
    ``build(*, ctx)`` or one positional parameter of another name get it; ``build()`` gets
    none. What it raises is raised."""
    parameters: Mapping[str, inspect.Parameter]
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        parameters = {}
    named = parameters.get("ctx")
    if named is not None and named.kind is not inspect.Parameter.POSITIONAL_ONLY:
        return factory(ctx=ctx)
    return factory(ctx) if required_positional(factory) >= 1 else factory()


def call_factory(factory: Callable[..., Any], ctx: AgentContext, path: str) -> Any:
    """The factory's first call, when the run starts (``invoke_factory``): one that raises
    is a setup error naming it (nothing has run)."""
    try:
        return invoke_factory(factory, ctx)
    except USER_CODE_FAILURES as exc:  # (an exit is a failure here, never a pass)
        raise AgentBuildError(
            [
                f"the agent factory {path} raised {type(exc).__name__}: {exc} ({where(exc)}); "
                "check what it reads from the environment and from ctx (ctx.prompt, ctx.model): "
                "nothing was run"
            ]
        ) from exc


def where(exc: BaseException) -> str:
    """The file and line an exception was raised at: the innermost frame in the user's
    code (not Python's own library, not an installed package), else the innermost."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    own = [f for f in frames if not f.filename.startswith(("<", *LIBRARY))]
    frame = (own or frames)[-1:]
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


def required_positional(fn: Callable[..., Any]) -> int:
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
    except USER_CODE_FAILURES as exc:  # the user's module raised (or exited) importing
        raise ImportError(
            f"importing {module_name} for {path} raised {type(exc).__name__}: {exc} "
            f"({where(exc)}); check the module's own imports and the environment variables "
            "it reads when imported"
        ) from exc
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise ImportError(f"cannot import {path}: {module_name} has no attribute {part!r}")
        value = getattr(value, part)
    return value


def source_of(path: str) -> tuple[Path, ...]:
    """The agent's code, by default: where the module ``path`` imports from lives, and
    where the agent's own code lives when that is elsewhere: the module defining the object
    ``path`` names, a compiled graph's node functions, and what the entry module imports
    (an entry ``my_project.evals.entry:agent`` wrapping ``memory_agent``'s graph covers
    ``memory_agent``). A module's code is its package's folder, or its file alone outside a
    package; installed packages and the standard library are left out (the installed
    packages' versions are fingerprinted apart), and so is eval_pipeline."""
    entry = sys.modules.get(path.partition(":")[0])
    if entry is None:
        return ()
    try:
        target = import_target(path)
    except ImportError:
        target = None
    modules = [entry]
    for value in (target, *vars(entry).values()):
        modules += _modules_of(value)
    found: list[Path] = []
    for module in modules:
        where = _code_of(module)
        if where is not None and where not in found:
            found.append(where)
    return tuple(p for p in found if not any(p != q and p.is_relative_to(q) for q in found))


def _modules_of(value: Any, depth: int = 0) -> list[Any]:
    """The modules ``value``'s code comes from: a module itself; a function's or class's
    module; a compiled graph's node functions' (its subgraphs' too)."""
    if inspect.ismodule(value):
        return [value]
    if is_graph(value):
        found = []
        for node in getattr(value, "nodes", {}).values():
            bound = getattr(node, "bound", None)
            if is_graph(bound) and depth < 5:
                found += _modules_of(bound, depth + 1)
            for func in (_attribute(bound, "func"), _attribute(bound, "afunc")):
                found += _modules_of(func, depth) if func is not None else []
        return found
    if inspect.isfunction(value) or inspect.isclass(value):
        module = sys.modules.get(getattr(value, "__module__", None) or "")
        return [module] if module is not None else []
    return []


def _attribute(value: Any, name: str) -> Any:
    """``value.name``, or None: a runnable may answer any attribute with code of its own
    (langchain's RunnableWithFallbacks resolves type hints there and raised NameError on
    the airline_support zoo agent's node)."""
    try:
        return getattr(value, name, None)
    except Exception:
        return None


def _code_of(module: Any) -> Path | None:
    """A module's package folder (its file outside a package), or None for an installed
    module, one of the standard library, or eval_pipeline's."""
    file = getattr(module, "__file__", None)
    if not file or module.__name__.partition(".")[0] == "eval_pipeline":
        return None
    if str(Path(file).absolute()).startswith(LIBRARY):
        return None
    found = Path(file).resolve()
    is_package = getattr(module, "__path__", None) is not None
    inside = (found.parent / "__init__.py").exists()
    return found.parent if is_package or inside else found


def importable(folder: Path) -> None:
    """The project's own packages import without being installed (as with `python -m`)."""
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
