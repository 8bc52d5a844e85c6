"""The command group: its commands loaded when named, and their errors turned into
messages and exit codes, in one place for every command.

Any ``EvalError`` a command raises (core/errors.py) becomes ``Error: <message>`` on stderr
(secrets redacted) and its exit code; a command that prints a verdict (``run``) ends with
``VERDICT: ERROR — …`` on stdout too, so CI's last line always says what happened.
"""

from __future__ import annotations

import importlib
import signal
import sys
import threading
from typing import Any

import click

from eval_pipeline.core.errors import EvalError, ExitCode, Terminated
from eval_pipeline.core.util.redact import redact

VERDICT_LINE = "eval_pipeline.verdict_line"  # ctx.meta key: the command ends with a verdict


def says_verdict(ctx: click.Context) -> None:
    """Mark the running command as one whose last line is a verdict, errors included."""
    ctx.meta[VERDICT_LINE] = True


class Group(click.Group):
    """A command group whose commands live in modules of their own, imported only when
    named (``eval-pipeline run`` does not import Dagster; click's "lazily loading
    subcommands" pattern; the group's ``--help`` lists them from their lines in ``lazy``,
    importing none), and whose commands' errors are reported by ``report``."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]] | None = None,
                 **kwargs: Any):  # fmt: skip
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}  # command name → ("module:attribute", its line in --help)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        target, summary = self.lazy[cmd_name]
        module, _, attribute = target.partition(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        command.short_help = summary
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their lines, as click lists them, without importing any."""
        rows = [(name, self.lazy[name][1] if name in self.lazy
                 else self.commands[name].get_short_help_str())
                for name in self.list_commands(ctx)]  # fmt: skip
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        previous = _stop_on_sigterm()
        try:
            return super().invoke(ctx)
        except EvalError as exc:
            report(ctx, str(exc), exc.exit_code)
        except KeyboardInterrupt as exc:  # (click: "Aborted!", exit 1, read as a regression)
            term = isinstance(exc, Terminated)
            report(
                ctx,
                f"interrupted ({'SIGTERM' if term else 'SIGINT'}): stopped; what finished is "
                "kept in the results store and the memo, and a run again reuses it",
                ExitCode.TERMINATED if term else ExitCode.INTERRUPTED,
            )
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


def _stop_on_sigterm() -> Any:
    """SIGTERM (what CI runners and Kubernetes send) stops a command as Ctrl-C does: its
    default killed the process with no message and no verdict line. The handler it
    replaces (to restore), or None where signals cannot be set (not the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int, frame: Any) -> None:
        raise Terminated()

    return signal.signal(signal.SIGTERM, stop)


def report(ctx: click.Context, message: str, code: ExitCode) -> None:
    """``Error: message`` on stderr (redacted, whole: paths stay unwrapped), the verdict
    line for a command that prints one, and exit ``code``."""
    from eval_pipeline.cli.report import error_line

    message = redact(message)
    click.echo(f"Error: {message}", err=True)
    if ctx.meta.get(VERDICT_LINE):
        click.echo(error_line(message, code))
    sys.exit(int(code))
