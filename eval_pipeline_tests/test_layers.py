"""The layers (docs/architecture.md): dependencies point down only, and core/evaluators
stay framework-free."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "eval_pipeline"
# Top to bottom; a layer may import itself and anything below it.
LAYERS = ["defs", "integrations", "agents", "llm", "core", "evaluators"]


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
