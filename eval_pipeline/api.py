"""``eval_pipeline.evaluate(...)``: evaluate a suite from Python (a user's pytest, a script).

The CLI's ``run`` is this function plus printing; both drive the run service
(eval_pipeline/service) in this process.

```python
from eval_pipeline import evaluate

def test_support_agent_did_not_get_worse():
    result = evaluate("support", tier="smoke", baseline_label="production")
    assert result.verdict == "PASS", result.errors or result.failed
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eval_pipeline import service
from eval_pipeline.core.errors import EvalError, RunFailed
from eval_pipeline.core.evaluation import EvalResult
from eval_pipeline.core.options import OptionsError, RunOptions, run_options
from eval_pipeline.core.running.runner import Progress
from eval_pipeline.core.util.redact import redact
from eval_pipeline.service import Environment, Prepared, RunRequest
from eval_pipeline.service.run import Recording


def prepare(
    suite: str,
    *,
    project: str | Path | None = None,
    prompt_version: int | None = None,
    label: str = "production",
    request: RunOptions | None = None,
    recording: Recording = "off",
) -> Prepared:
    """Everything up to the first model call, from this process's environment; any problem
    raises an ``EvalError`` (core/errors.py) and nothing is written."""
    env = Environment.from_env(project)
    wanted = RunRequest(suite, request or RunOptions(), prompt_version, label, recording)
    return service.prepare(env, wanted)


def run_prepared(prepared: Prepared, *, progress: Progress | None = None) -> EvalResult:
    """Every stage in this process (the shards of a ``--workers`` run in worker
    processes). A stage that fails after the run was recorded raises ``RunFailed`` (the
    run is marked failed with the reason)."""
    try:
        result = service.run_in_process(prepared, progress=progress).result
    except EvalError:
        raise
    except Exception as exc:  # recorded on the run by the stage that failed
        message = redact(f"{type(exc).__name__}: {exc}")
        raise RunFailed(f"run {prepared.run_id} failed: {message}") from exc
    return result


def evaluate(
    suite: str,
    *,
    project: str | Path | None = None,
    prompt_version: int | None = None,
    label: str = "production",
    recording: Recording = "off",
    **options: Any,
) -> EvalResult:
    """Evaluate ``suite`` of the project file (found from the working directory unless
    ``project`` names it) and gate it. ``options`` are the fields of RunOptions
    (core/options.py), the CLI's flags under their own names: ``tier``, ``repeats``,
    ``concurrency``, ``timeout_s``, ``cache``, ``baseline_label`` (gate against the latest
    full run of the version this label points to), ``baseline_run_id``, ``margin``,
    ``min_primary``, ``shards`` (processes sharing ``concurrency``), ….
    ``result.verdict`` is PASS, FAIL, UNDECIDED or ERROR (``result.exit_code`` the CLI's
    0, 1, 3 — 0 under ``on_undecided="warn"`` — or 2), ``result.failed`` names what failed,
    ``result.undecided`` what the gate could not decide, ``result.errors`` why there is no
    verdict. A configuration it cannot start from raises a ``ConfigurationError``."""
    try:
        request = run_options(**options)
    except OptionsError as exc:
        raise OptionsError(f"evaluate(): {exc}") from None
    prepared = prepare(suite, project=project, prompt_version=prompt_version, label=label,
                       request=request, recording=recording)  # fmt: skip
    return run_prepared(prepared)
