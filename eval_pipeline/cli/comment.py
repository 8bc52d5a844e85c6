"""`eval-pipeline comment`: the verdicts of a pull request's suites as one comment on it,
updated in place on every push (found by its marker), the way Langfuse's experiment action
and Braintrust's eval action post theirs. Used by .github/workflows/eval.yml."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click
import httpx

from eval_pipeline.core.errors import ConfigurationError, ServiceError
from eval_pipeline.core.reports.result_file import ResultFile
from eval_pipeline.core.scoring.summary import md_escape
from eval_pipeline.core.util import tls

MARKER = "<!-- eval-pipeline verdicts -->"


def comment_body(results: list[ResultFile], summary_url: str | None) -> str:
    """One line per suite: its verdict and why, the Δ that backs it against the baseline
    and its interval, after how many cases the gate decided; the job summaries' link."""
    lines = [MARKER, "### Evaluation gates", "",
             "| suite | verdict | metric | Δ | interval | decided |",
             "|---|---|---|---:|---|---|"]  # fmt: skip
    for result in sorted(results, key=lambda r: r.run.suite):
        said = result.conclusion
        verdict = f"**{said.verdict}**" + (f" — {md_escape(said.reason[:120])}" if said.reason
                                           else "")  # fmt: skip
        decided, metric = md_escape(said.decided_after or "–"), md_escape(said.metric or "–")
        lines.append(f"| {md_escape(result.run.suite)} | {verdict} | {metric} | "
                     f"{said.delta_text} | {said.interval_text} | {decided} |")  # fmt: skip
    if summary_url:
        lines += ["", f"The evidence, suite by suite: [the job summaries]({summary_url})."]
    return "\n".join(lines) + "\n"


def read_results(folder: Path) -> list[ResultFile]:
    """The results files (``--json``) in ``folder``; a base commit's (``*-base.json``) are
    the baselines, not verdicts."""
    found = []
    for path in sorted(folder.glob("*.json")):
        if path.stem.endswith("-base"):
            continue
        try:
            found.append(ResultFile.model_validate_json(path.read_text()))
        except ValueError as exc:
            raise ConfigurationError(f"{path}: not a results file of this version of "
                                     f"eval-pipeline ({type(exc).__name__}); write it with "
                                     "`eval-pipeline run --json`") from None  # fmt: skip
    return found


def upsert(api: str, repo: str, number: int, token: str, body: str) -> str:
    """Update the pull request's comment that carries the marker, or post one; its URL."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
               "X-GitHub-Api-Version": "2022-11-28"}  # fmt: skip
    with httpx.Client(base_url=api.rstrip("/"), headers=headers, timeout=30,
                      verify=tls.shared_context()) as client:  # fmt: skip
        mine = None
        page = 1
        while mine is None:
            listed = client.get(f"/repos/{repo}/issues/{number}/comments",
                                params={"per_page": 100, "page": page})  # fmt: skip
            _raise_for(listed, "list the pull request's comments")
            comments = listed.json()
            mine = next((c for c in comments if MARKER in (c.get("body") or "")), None)
            if len(comments) < 100:
                break
            page += 1
        if mine is not None:
            done = client.patch(f"/repos/{repo}/issues/comments/{mine['id']}", json={"body": body})
        else:
            done = client.post(f"/repos/{repo}/issues/{number}/comments", json={"body": body})
        _raise_for(done, "write the comment")
        return done.json().get("html_url", "")


def _raise_for(response: httpx.Response, what: str) -> None:
    if response.status_code >= 400:
        hint = (" (the workflow's token needs `permissions: pull-requests: write`)"
                if response.status_code in (401, 403, 404) else "")  # fmt: skip
        raise ServiceError(f"GitHub refused to {what}: HTTP {response.status_code}{hint}")


def pull_request_number() -> int | None:
    """From the event GitHub Actions ran for (GITHUB_EVENT_PATH)."""
    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path or not Path(path).is_file():
        return None
    event = json.loads(Path(path).read_text())
    number = (event.get("pull_request") or {}).get("number")
    return int(number) if number else None


@click.command()
@click.argument("folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--pr", "number", type=int, default=None,
              help="The pull request (default: GitHub Actions' event).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Print the comment; post nothing.")
def comment(folder: Path, number: int | None, dry_run: bool) -> None:
    """Post (or update) one comment on the pull request with each suite's verdict from the
    results files in FOLDER (GITHUB_TOKEN, GITHUB_REPOSITORY and GITHUB_API_URL as GitHub
    Actions sets them)."""
    results = read_results(folder)
    if not results:
        raise ConfigurationError(f"{folder}: no results files (*.json from `eval-pipeline run "
                                 "--json`): nothing to comment")  # fmt: skip
    env = os.environ
    repo = env.get("GITHUB_REPOSITORY")
    summary_url = None
    if repo and env.get("GITHUB_RUN_ID"):
        server = env.get("GITHUB_SERVER_URL", "https://github.com")
        summary_url = f"{server}/{repo}/actions/runs/{env['GITHUB_RUN_ID']}"
    body = comment_body(results, summary_url)
    if dry_run:
        click.echo(body, nl=False)
        return
    number = number or pull_request_number()
    token = env.get("GITHUB_TOKEN")
    missing = [name for name, value in (("GITHUB_TOKEN", token), ("GITHUB_REPOSITORY", repo),
                                        ("--pr", number)) if not value]  # fmt: skip
    if missing:
        raise ConfigurationError(f"cannot post the comment without {', '.join(missing)} (set "
                                 "by GitHub Actions; --dry-run prints it)")  # fmt: skip
    assert number is not None  # (else it is missing, above)
    url = upsert(env.get("GITHUB_API_URL", "https://api.github.com"), str(repo), number,
                 str(token), body)  # fmt: skip
    click.echo(f"Verdicts of {len(results)} suite(s) on pull request #{number}: {url}")
