"""`eval-pipeline prompts`: the prompt registry runs read (list, show, label, add): Langfuse
when it is configured, else the project's prompts/ folder (integrations/services.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from eval_pipeline.cli.report import console

if TYPE_CHECKING:
    from eval_pipeline.integrations.prompt_registry import PromptRegistry


@click.group()
def prompts() -> None:
    """The prompt registry runs read: Langfuse's prompts when LANGFUSE_* is set, else the
    project's prompts/ and prompts/labels.yaml."""


def _registry() -> PromptRegistry:
    from eval_pipeline.agents.project import load_project
    from eval_pipeline.integrations.services import Services

    return Services.from_env(load_project().prompts_dir).registry()


@prompts.command("list")
def prompts_list() -> None:
    """Every prompt with its versions and labels."""
    from rich.table import Table

    registry = _registry()
    table = Table(title=f"Prompts in {registry.description}")
    for column in ("name", "versions", "labels"):
        table.add_column(column)
    for name, versions, labels in registry.list_prompts():
        shown = ", ".join(f"{label} → v{v}" for label, v in sorted(labels.items()))
        table.add_row(name, ", ".join(f"v{v}" for v in versions), shown or "–")
    console.print(table)


@prompts.command("show")
@click.argument("name")
@click.option("--version", type=int, default=None, help="Version (default: --label).")
@click.option("--label", default="production", show_default=True)
def prompts_show(name: str, version: int | None, label: str) -> None:
    """Print one prompt version: labels, content hash, config and text."""
    registry = _registry()
    prompt = registry.get(name, version) if version else registry.get_by_label(name, label)
    console.print(
        f"[bold]{prompt.name} v{prompt.version}[/]  type {prompt.type}  hash {prompt.content_hash}"
        f"  labels {', '.join(prompt.labels) or '–'}\nconfig {prompt.config}"
    )
    console.print(prompt.system_text(), markup=False, highlight=False)


@prompts.command("label")
@click.argument("name")
@click.argument("version", type=int)
@click.argument("label")
def prompts_label(name: str, version: int, label: str) -> None:
    """Point LABEL of prompt NAME at VERSION (moves it if it was elsewhere)."""
    registry = _registry()
    previous = registry.set_label(name, version, label)
    moved = ("already there" if previous == version
             else f"moved from v{previous}" if previous else "set")  # fmt: skip
    console.print(f"{name}: label {label} → v{version} ({moved}) in {registry.description}")


@prompts.command("add")
@click.argument("name")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--label", default=None, help="Also point this label at the new version.")
def prompts_add(name: str, source: Path, label: str | None) -> None:
    """Store SOURCE as the next version of NAME (.yaml: type/prompt/config; else text)."""
    registry = _registry()
    prompt = registry.add(name, source, label)
    added = f"{name}: added v{prompt.version} ({prompt.content_hash}) in {registry.description}"
    if label:
        console.print(f"{added}, labelled {label}")
        return
    console.print(f"{added}; label it with "
                  f"`eval-pipeline prompts label {name} {prompt.version} staging`")  # fmt: skip
