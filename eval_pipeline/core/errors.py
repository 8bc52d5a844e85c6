"""One error hierarchy and one set of exit codes, for the CLI, ``evaluate()`` and Dagster.

Every error eval-pipeline raises on purpose is an ``EvalError``: its message names what
to fix (the file, the field, the value) and its ``exit_code`` says whose problem it is.
The CLI turns any of them into ``Error: <message>`` and that exit code in one place
(``cli/group.py``); ``evaluate()`` raises them as they are; Dagster shows the message.

- ``ConfigurationError`` (a ``ValueError``): a file, a flag, a setting or a choice that
  cannot be used. Nothing was run. Exit 2.
- ``ServiceError`` (a ``RuntimeError``): something outside the agent failed or cannot be
  reached (the results store, the model endpoint, the prompt registry, Langfuse). Exit 2.

An item's own failure (a timeout, the agent's exception) is not an ``EvalError``: it is
recorded on the item and classified by ``core/running/failures.py``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from enum import IntEnum
from typing import ClassVar

# What the user's code (agent, factory, evaluator, plugin, case validator) may raise that
# we catch at its boundary and report as its failure: any exception, and ``sys.exit()``
# (SystemExit is no Exception: it passed through, a plugin's exit(0) became a pass, an
# agent's hung the run). KeyboardInterrupt stays the user's stop (exit 130).
USER_CODE_FAILURES: tuple[type[BaseException], ...] = (Exception, SystemExit)


class ExitCode(IntEnum):
    """What a run's exit status means to CI."""

    PASS = 0  # every blocking check passed
    FAIL = 1  # the agent got worse, or is below a floor
    ERROR = 2  # configuration or infrastructure: the run could not tell; investigate first
    UNDECIDED = 3  # the gate could not tell yet (on_undecided: fail)
    INTERRUPTED = 130  # stopped by the user (SIGINT), after writing what finished
    TERMINATED = 143  # stopped by SIGTERM (a CI runner, Kubernetes), as SIGINT stops it


class EvalError(Exception):
    """The base of every error eval-pipeline raises on purpose (see the module)."""

    exit_code: ClassVar[ExitCode] = ExitCode.ERROR


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run is as Ctrl-C's KeyboardInterrupt is (cli/group.py),
    so the run stops the same way: what finished kept, the verdict line printed, exit 143
    (128 + 15, the shell's convention, so CI still sees which signal stopped it)."""


class ConfigurationError(EvalError, ValueError):
    """Something the user wrote or chose cannot be used; nothing was run."""


class ServiceError(EvalError, RuntimeError):
    """A service the run needs failed or cannot be reached (retry, or fix its settings)."""


class RunFailed(EvalError, RuntimeError):
    """A stage failed after the run was recorded (the run is marked failed with why)."""


def explanation_failed(what: str, exc: BaseException) -> str:
    """The line a report shows where something that only explains a verdict (a note, a
    description, a chart, metadata) could not be composed. Such a failure is reported and
    never decides the run: the verdict is made before, and without, its explanation."""
    return f"{what} could not be composed ({type(exc).__name__}: {exc})"


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the nearest of ``choices`` to a misspelt ``value``
    (difflib's closest match), or "" when none is near."""
    near = difflib.get_close_matches(value, list(choices), n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""
