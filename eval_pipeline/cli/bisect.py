"""`eval-pipeline bisect`: the first prompt version, or the first commit, that made an
agent worse, found by bisection (core/analysis/bisect.py), each step a sequential gate against
one full run of the good end.

- Prompt versions (``--good V1 --bad V2``): every version from V1 to V2 is a candidate,
  evaluated in this process through ``api.evaluate``.
- Commits (``--commits A..B``): A and the first-parent commits after it up to B are the
  candidates. Each is evaluated the way the CI workflow (.github/workflows/eval.yml)
  evaluates a pull request's base commit: its tree checked out with ``git worktree add
  --detach``, this checkout's cases copied in (every step evaluates the same dataset),
  and ``eval-pipeline run`` started there with ``PYTHONPATH`` at that tree, so the
  commit's own agent code and prompts run in a fresh interpreter. Every run writes to
  this checkout's results store; the worktrees are removed afterwards.

Outputs the memo has (the same agent, prompt, model, case and repeat) are reused, so a
bisection run again costs no model calls.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from eval_pipeline import api, settings
from eval_pipeline.agents.project import Project, ProjectError, load_project
from eval_pipeline.cli.run_flags import flags_of, run_option
from eval_pipeline.core.analysis.bisect import (
    Bisection,
    Step,
    baseline_of,
    bisect,
    failed_step,
    step_of,
)
from eval_pipeline.core.errors import ConfigurationError, EvalError
from eval_pipeline.core.options import RunOptions, run_options
from eval_pipeline.core.prompts.labels import PromptError
from eval_pipeline.core.reports.result_file import ResultFile
from eval_pipeline.core.running.budget import Spending
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suites.cases import DatasetError
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.core.util.redact import redact
from eval_pipeline.integrations.prompt_registry import RegistryUnavailable
from eval_pipeline.integrations.services import Services

GIT_TIMEOUT_S = 60
MakeStep = Callable[[str, ResultFile, int], Step]  # core/analysis/bisect.py: baseline_of, step_of


@dataclass(frozen=True)
class Watch:
    """What the caller is told as a bisection goes: a candidate's run starting (it may
    take minutes), then decided."""

    started: Callable[[str], None] = lambda name: None
    decided: Callable[[Step], None] = lambda step: None


class BisectError(ConfigurationError):
    """A bisection that cannot start (unknown suite, versions, range, no git): the
    message names the value and what to do; nothing was run. The CLI exits 2."""


def baseline_options(request: RunOptions) -> RunOptions:
    """The good end's run: the whole suite, so every step can draw any case from it."""
    return request.model_copy(update={"tier": "full", "gate": "fixed", "baseline_run_id": None})


def step_options(request: RunOptions, baseline_run_id: str) -> RunOptions:
    """A step: the tier's cases first, then more until the gate itself decides."""
    return request.model_copy(update={
        "gate": "sequential", "sequential_until": "decided", "on_undecided": "fail",
        "baseline_run_id": baseline_run_id, "baseline_label": None,
    })  # fmt: skip


def _suite(name: str) -> tuple[Project, Suite]:
    """The project found from here (or --project) and its suite ``name``."""
    try:
        project = load_project()
        return project, project.suite(name)
    except (ProjectError, DatasetError) as exc:
        raise BisectError(str(exc)) from exc


# --- prompt versions ------------------------------------------------------------------
def bisect_versions(suite: str, good: int, bad: int, request: RunOptions,
                    watch: Watch = Watch()) -> Bisection:  # fmt: skip
    """The first version after ``good`` up to ``bad`` the gate finds worse than ``good``."""
    if good >= bad:
        raise BisectError(f"--good {good} must be an earlier prompt version than --bad {bad}")
    project, chosen = _suite(suite)
    if chosen.prompt_name is None:
        raise BisectError(f"suite {suite} declares no prompt: there are no prompt versions to "
                          "bisect (bisect its commits with --commits A..B)")  # fmt: skip
    try:
        services = Services.from_env(project.prompts_dir)
        for version in range(good, bad + 1):  # every candidate exists before anything runs
            services.prompt(services.suite(chosen), version=version)
    except (PromptError, RegistryUnavailable) as exc:
        raise BisectError(f"{exc} (bisect evaluates every version from --good {good} to "
                          f"--bad {bad})") from exc  # fmt: skip
    names = [f"version {v}" for v in range(good, bad + 1)]

    def evaluated(index: int, options: RunOptions, make: MakeStep) -> Step:
        watch.started(names[index])
        try:
            result = api.evaluate(suite, prompt_version=good + index, **options.model_dump())
        except EvalError as exc:
            return failed_step(names[index], str(exc))
        calls = Spending.of_run(result.outputs, result.scores).calls
        return make(names[index], ResultFile.of(result), calls)

    baseline = evaluated(0, baseline_options(request), baseline_of)
    watch.decided(baseline)
    options = step_options(request, baseline.run_id)
    return bisect(names, baseline, lambda i: evaluated(i, options, step_of), watch.decided)


# --- commits ------------------------------------------------------------------------
def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        raise BisectError(f"--commits needs git, and running it failed: {exc}") from exc
    if done.returncode != 0:
        raise BisectError(f"git {' '.join(args)} in {root} failed: "
                          f"{done.stderr.strip() or done.stdout.strip()}")  # fmt: skip
    return done.stdout.strip()


def commit_range(root: Path, commits: str) -> list[tuple[str, str]]:
    """``A..B``: A, then the first-parent commits after A up to B, as (sha, subject)."""
    good, sep, bad = commits.partition("..")
    if not sep or not good or not bad or bad.startswith("."):
        raise BisectError(f"--commits {commits!r}: give a range A..B (A the last good "
                          "commit, B the first known bad one), e.g. v1.2..HEAD")  # fmt: skip
    shas = []
    for end in (good, bad):
        try:
            shas.append(_git(root, "rev-parse", "--verify", "--quiet", f"{end}^{{commit}}"))
        except BisectError:
            raise BisectError(f"--commits {commits!r}: {end!r} is not a commit of the "
                              f"repository at {root}") from None  # fmt: skip
    first, last = shas
    try:
        _git(root, "merge-base", "--is-ancestor", first, last)
    except BisectError:
        raise BisectError(f"--commits {commits!r}: {good} is not an ancestor of {bad}; "
                          "the good commit comes first") from None  # fmt: skip
    later = _git(root, "rev-list", "--reverse", "--first-parent", f"{first}..{last}").split()
    if not later:
        raise BisectError(f"--commits {commits!r}: no commits between {good} and {bad}")
    if later[-1] != last:
        raise BisectError(f"--commits {commits!r}: {bad} is not on the first-parent line "
                          f"after {good}")  # fmt: skip
    return [(sha, _git(root, "log", "-1", "--format=%s", sha)) for sha in [first, *later]]


def bisect_commits(suite: str, commits: str, request: RunOptions, *, label: str = "production",
                   watch: Watch = Watch()) -> Bisection:  # fmt: skip
    """The first commit after A up to B whose agent (and its prompt labelled ``label``)
    the gate finds worse than A's, on this checkout's cases."""
    project, chosen = _suite(suite)
    try:
        root = Path(_git(project.dir, "rev-parse", "--show-toplevel")).resolve()
    except BisectError:
        raise BisectError(f"the project {project.path} is not in a git repository: "
                          "--commits needs one (or bisect prompt versions with "
                          "--good and --bad)") from None  # fmt: skip
    candidates = commit_range(root, commits)
    names = [f"commit {sha[:10]} ({subject})" for sha, subject in candidates]
    where = project.path.resolve().relative_to(root)
    dataset = None if chosen.dataset_ref is not None else chosen.dataset_dir.resolve()
    if dataset is not None and not dataset.is_relative_to(root):
        raise BisectError(f"the dataset of {suite}, {dataset}, is outside the repository "
                          f"{root}: --commits copies it into each commit's worktree, so it "
                          "must be in the repository")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="eval-bisect-") as scratch:
        at = CommitRuns(root, where, dataset, suite, label, Path(scratch), watch)
        baseline = at.run(candidates[0][0], names[0], baseline_options(request), baseline_of)
        watch.decided(baseline)
        options = step_options(request, baseline.run_id)
        return bisect(names, baseline,
                      lambda i: at.run(candidates[i][0], names[i], options, step_of),
                      watch.decided)  # fmt: skip


class CommitRuns:
    """Runs of one suite at given commits, each in a worktree of its own (removed after)."""

    def __init__(self, root: Path, project: Path, dataset: Path | None, suite: str,
                 label: str, scratch: Path, watch: Watch):  # fmt: skip
        self.root, self.project, self.dataset = root, project, dataset
        self.suite, self.label, self.scratch, self.watch = suite, label, scratch, watch
        self.store_url = settings.results_url()  # this checkout's, not the worktree's

    def run(self, sha: str, name: str, options: RunOptions, make: MakeStep) -> Step:
        self.watch.started(name)
        output = self.scratch / f"{sha}.json"
        with self.worktree(sha) as tree:
            if not (tree / self.project).is_file():
                return failed_step(name, f"{self.project} does not exist at this commit")
            if self.dataset is not None:
                copy = tree / self.dataset.relative_to(self.root)
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(self.dataset, copy)
            done = subprocess.run(
                [sys.executable, "-m", "eval_pipeline.cli", "--project", str(tree / self.project),
                 "run", "--suite", self.suite, "--label", self.label, *run_flags(options),
                 "--json", str(output)],
                cwd=tree, env=self.environment(tree, sha), capture_output=True, text=True,
                check=False,
            )  # fmt: skip
        try:
            result = ResultFile.model_validate_json(output.read_text())
        except (OSError, ValidationError) as exc:
            said = (done.stderr.strip() or done.stdout.strip()).splitlines()
            why = said[-1] if said else f"{type(exc).__name__}: {exc}"
            return failed_step(name, redact(f"eval-pipeline run exited {done.returncode}: {why}"))
        with ResultsStore(self.store_url) as store:
            rid = result.run.run_id
            calls = Spending.of_run(store.read_outputs(rid), store.read_scores(rid)).calls
        return make(name, result, calls)

    def environment(self, tree: Path, sha: str) -> dict[str, str]:
        """This process's environment, with the commit's tree importable first (as the CI
        workflow does), this checkout's results store and home, and the commit named."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH")) if p)
        env |= {"EVAL_RESULTS_URL": self.store_url, "EVAL_HOME": str(settings.eval_home()),
                "EVAL_GIT_COMMIT": sha}  # fmt: skip
        env.pop("EVAL_PROJECT", None)  # --project names the worktree's
        return env

    @contextmanager
    def worktree(self, sha: str) -> Iterator[Path]:
        tree = self.scratch / sha[:12]
        _git(self.root, "worktree", "add", "--detach", "--quiet", str(tree), sha)
        try:
            yield tree
        finally:
            subprocess.run(["git", "-C", str(self.root), "worktree", "remove", "--force",
                            str(tree)], capture_output=True, check=False)  # fmt: skip
            subprocess.run(["git", "-C", str(self.root), "worktree", "prune"],
                           capture_output=True, check=False)  # fmt: skip


def run_flags(options: RunOptions) -> list[str]:
    """``options`` as ``eval-pipeline run`` flags (those that differ from the defaults)."""
    from eval_pipeline.cli.run import run

    return flags_of(run, options)


@click.command("bisect")
@click.option("--suite", "suite_name", required=True, help="Suite to bisect.")
@click.option("--good", type=int, default=None, metavar="VERSION",
              help="The last prompt version known good (the baseline of every step).")  # fmt: skip
@click.option("--bad", type=int, default=None, metavar="VERSION",
              help="A later prompt version known worse.")  # fmt: skip
@click.option("--commits", default=None, metavar="A..B",
              help="Bisect commits instead: A the last good, B a bad one; each commit's "
                   "agent and prompts run in a worktree on this checkout's cases.")  # fmt: skip
@click.option("--label", default="production", show_default=True,
              help="With --commits: the prompt label each commit evaluates.")  # fmt: skip
@run_option("tier", default="smoke",
            help="The cases each step starts with, before the sequential gate draws more "
                 "(the good end always runs the full suite).")  # fmt: skip
@run_option("repeats")
@run_option("concurrency", help="Items in flight.")
@run_option("timeout_s")
@run_option("margin")
@run_option("cache")
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None,
              help="Also write the steps and the outcome as JSON.")  # fmt: skip
def bisect_command(suite_name: str, good: int | None, bad: int | None, commits: str | None,
                   label: str, json_path: Path | None, **options: Any) -> None:  # fmt: skip
    """Find the first prompt version (--good V1 --bad V2) or commit (--commits A..B) that
    made the agent worse: the good end runs the full suite once, then each step is a
    sequential gate against it (the bad end first, then midpoints). Prints each step and
    the first bad with the gate's evidence and the model calls spent; exit 0 found, 2 bad
    input, an error or nothing to bisect, 3 a step the gate could not decide."""
    import dataclasses
    import json

    versions = good is not None or bad is not None
    if versions == (commits is not None) or (versions and (good is None or bad is None)):
        raise BisectError("give --good and --bad (two prompt versions) or --commits A..B "
                          "(two commits), not both")  # fmt: skip
    from eval_pipeline.cli.run import writable

    writable("--json", json_path)
    request = run_options(**options)

    watch = Watch(started=lambda name: click.echo(f"evaluating {name} …", err=True),
                  decided=lambda step: click.echo(step.line()))  # fmt: skip
    if commits is not None:
        found = bisect_commits(suite_name, commits, request, label=label, watch=watch)
    else:
        assert good is not None and bad is not None  # (both given: checked above)
        found = bisect_versions(suite_name, good, bad, request, watch=watch)
    if json_path:
        body = dataclasses.asdict(found) | {"first_bad": found.first_bad,
                                            "model_calls": found.model_calls,
                                            "exit_code": found.exit_code}  # fmt: skip
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    click.echo(found.final_line())
    sys.exit(found.exit_code)
