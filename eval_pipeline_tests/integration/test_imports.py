"""The package's shape: no import circle anywhere, and one declared public surface
(``eval_pipeline`` for a user's code, ``eval_pipeline.plugins`` for what a plugin
registers) that the examples and the docs' code keep to."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import eval_pipeline
import eval_pipeline.plugins
from eval_pipeline_tests.helpers import ROOT

PACKAGE = ROOT / "eval_pipeline"
PUBLIC = {"eval_pipeline", "eval_pipeline.plugins"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imported(path: Path) -> set[str]:
    """The package's modules ``path`` imports, at any depth of its code (a function's own
    imports included), except under ``if TYPE_CHECKING:``, which never runs."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for child in block.body
        for node in ast.walk(child)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    return {name for name in found if name in MODULES}


def test_no_import_circle():
    """Tarjan's strongly connected components over the package's import graph: every one
    must be a single module. (A package importing its own submodules is no circle: a
    submodule's import of its parent package is implied, not written.)"""
    graph = {name: imported(path) - {name} for name, path in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for name in graph:
        if name not in index:
            visit(name)
    assert not circles, circles


def test_the_public_names_resolve_and_import_cheaply():
    for name in eval_pipeline.__all__:
        assert getattr(eval_pipeline, name) is not None, name
    for name in eval_pipeline.plugins.__all__:
        assert getattr(eval_pipeline.plugins, name) is not None, name
    code = "import sys, eval_pipeline; print('dagster' in sys.modules, 'langgraph' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]  # `import eval_pipeline` stays cheap


HEAVY = ("dagster", "scipy", "pandas", "langfuse", "sqlalchemy", "langchain_core", "langgraph")


def test_the_cli_lists_its_commands_without_importing_them():
    """`eval-pipeline --help` imports no command module and none of their heavy
    dependencies (it took 5.5 s of imports); the report a verdict prints needs
    scipy.special's distribution functions, never scipy.stats (~0.5 s a process)."""
    code = (
        "import sys\nfrom eval_pipeline.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print('HELP', *[m for m in {HEAVY!r} if m in sys.modules])\n"
        "print('COMMANDS', *[m for m in sys.modules if m.startswith('eval_pipeline.cli.')])\n"
        "import eval_pipeline.cli.report\n"
        "print('REPORT', 'scipy.stats' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines() if line}
    assert lines["HELP"] == [] and lines["COMMANDS"] == ["eval_pipeline.cli.group"], out.stdout
    assert "  run  " in out.stdout and "verdicts" in out.stdout  # every command still listed
    assert lines["REPORT"] == ["False"]


def _deep_imports(source: str) -> list[str]:
    """``from eval_pipeline.x import …`` / ``import eval_pipeline.x`` outside the public
    modules."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found += [n for n in names if n.startswith("eval_pipeline") and n not in PUBLIC]
    return found


def test_the_examples_use_only_the_public_names():
    offenders = {
        str(path.relative_to(ROOT)): deep
        for path in (ROOT / "examples" / "eval_examples").rglob("*.py")
        if (deep := _deep_imports(path.read_text()))
    }
    assert not offenders, offenders


def test_the_docs_code_uses_only_the_public_names():
    offenders = {}
    for page in [*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]:
        for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S):
            if deep := _deep_imports(block):
                offenders[page.name] = deep
    assert not offenders, offenders


def test_the_examples_package_does_not_shadow_its_subpackages():
    """``import eval_examples.drive_thru.evaluators`` works: the package's own names do not
    hide its subpackages."""
    code = ("import eval_examples, eval_examples.drive_thru.evaluators as e; "
            "import eval_examples.research as r; print(e.__name__, r.__name__)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT / "examples", check=True)  # fmt: skip
    assert out.stdout.split() == ["eval_examples.drive_thru.evaluators", "eval_examples.research"]
