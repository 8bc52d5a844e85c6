"""The layers (docs/architecture.md): dependencies point down only, and core/evaluators
stay framework-free."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "eval_pipeline"
# Top to bottom; a layer may import itself and anything below it.
LAYERS = ["defs", "service", "integrations", "agents", "llm", "core", "evaluators"]


def imports(path: Path) -> list[tuple[str, list[str]]]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [alias.name for alias in node.names]))
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_imports_point_down(layer):
    allowed = set(LAYERS[LAYERS.index(layer) :])
    for path in (PACKAGE / layer).rglob("*.py"):
        for module, _ in imports(path):
            parts = module.split(".")
            if parts[0] == "eval_pipeline" and len(parts) > 1 and parts[1] in LAYERS:
                assert parts[1] in allowed, f"{path.relative_to(PACKAGE)} imports {module}"


@pytest.mark.parametrize("layer", ["core", "evaluators"])
def test_core_and_evaluators_are_framework_free(layer):
    for path in (PACKAGE / layer).rglob("*.py"):
        for module, names in imports(path):
            top = module.split(".")[0]
            assert top != "dagster", f"{path.name} imports {module}"
            if top == "langfuse":
                assert module == "langfuse" and names == ["Evaluation"], f"{path.name}: {module}"


def test_the_api_the_service_and_core_never_import_dagster():
    """Dagster is one driver of the run service (defs/, and the CLI's commands that drive
    it): ``evaluate()`` (api.py), the service and core never import it, nor defs/, not even
    inside a function (``api.run_prepared`` once registered Dagster partitions)."""
    paths = [PACKAGE / "api.py", *(PACKAGE / "service").rglob("*.py"),
             *(PACKAGE / "core").rglob("*.py")]  # fmt: skip
    offenders = [
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in paths
        for module, _ in imports(path)
        if module.split(".")[0] == "dagster" or module.startswith("eval_pipeline.defs")
    ]
    assert not offenders, offenders


EXAMPLES = PACKAGE.parent / "examples"


def test_the_package_imports_no_example_code():
    """The examples are a project of their own (examples/eval-pipeline.yaml): they import
    the package, never the other way round; the offline model learns their behaviours from
    their plugin module, not from a table in the package."""
    example_modules = {p.name for p in (EXAMPLES / "eval_examples").iterdir() if p.is_dir()}
    example_modules |= {"eval_examples"}
    offenders = [
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in PACKAGE.rglob("*.py")
        for module, _ in imports(path)
        if module.split(".")[0] in example_modules
    ]
    assert not offenders, offenders
    assert not (PACKAGE.parent / "eval-pipeline.yaml").exists(), "the project file moved"
    assert (EXAMPLES / "eval-pipeline.yaml").is_file()


def test_without_the_examples_the_offline_model_knows_only_the_judge():
    """A fresh interpreter importing the package alone: the offline model has no example
    behaviour, and the built-in evaluators are the package's only."""
    import subprocess
    import sys

    code = (
        "import sys; from eval_pipeline.llm.offline.model import BEHAVIOURS; "
        "from eval_pipeline.evaluators import registry; "
        "import eval_pipeline.agents.project, eval_pipeline.defs; "
        "print(sorted(sorted(k) for k in BEHAVIOURS)); "
        "print('order_correctness' in registry.ITEM); "
        "print(any(m.startswith('eval_examples') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=PACKAGE.parent, check=True, env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    assert out.stdout.split("\n")[:3] == ["[['JudgeVerdict']]", "False", "False"], out
