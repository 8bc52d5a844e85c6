"""The documentation a newcomer navigates: the docs site builds with --strict (a broken
link, a missing anchor or a page left out of the nav fails it), every relative link in the
README and docs/ reaches an existing file and heading, the README stays short, and the
evaluator reference lists exactly the built-in evaluators."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from eval_pipeline.evaluators import registry
from eval_pipeline_tests.helpers import ROOT

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
MKDOCS = Path(sys.executable).parent / "mkdocs"

FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def prose(text: str) -> str:
    """The text outside code blocks and inline code, where links are links."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def heading_text(raw: str) -> str:
    """A heading as rendered: code spans and links reduced to their text."""
    raw = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    return raw.replace("`", "").replace("*", "")


def mkdocs_slug(text: str) -> str:
    """Python-Markdown's toc slugify (what the site's anchors are)."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def github_slug(text: str) -> str:
    """GitHub's heading anchors (the same pages read on GitHub)."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path, slug) -> set[str]:
    found: set[str] = set()
    for raw in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(heading_text(raw))
        name, n = base, 0
        while name in found:  # repeated headings get a suffix; no page relies on one
            n += 1
            name = f"{base}_{n}"
        found.add(name)
    return found


def relative_links(page: Path) -> list[str]:
    return [
        target
        for target in LINK.findall(prose(page.read_text(encoding="utf-8")))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def test_the_docs_site_builds_strict(tmp_path):
    """What .ci/run runs: any warning (a broken link or anchor, a page missing from the
    nav) fails the build."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "evaluators" / "index.html").is_file()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_heading(page):
    problems = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            problems.append(f"{target}: no such file {linked}")
            continue
        if anchor and linked.suffix == ".md":
            # Both renderings: the site (mkdocs) and GitHub, whose slugs differ on
            # punctuation runs; a heading whose two slugs differ cannot be linked to.
            for slug in (mkdocs_slug, github_slug):
                if anchor not in anchors(linked, slug):
                    problems.append(f"{target}: no heading with the {slug.__name__} {anchor!r}")
    assert not problems, f"{page.relative_to(ROOT)}:\n" + "\n".join(problems)


def test_the_link_checker_sees_broken_links(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## Large runs: `--workers N`\n\n[ok](#title) [gone](missing.md) "
        "[bad](#nope) [differs](#large-runs-workers-n) `[code](ignored.md)` "
        "[web](https://example.com)\n\n```\n[block](ignored.md)\n```\n"
    )
    assert relative_links(page) == ["#title", "missing.md", "#nope", "#large-runs-workers-n"]
    assert "large-runs-workers-n" in anchors(page, mkdocs_slug)
    assert "large-runs-workers-n" not in anchors(page, github_slug)


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 160, f"README.md has {len(lines)} lines; move detail into docs/"


def test_the_evaluator_reference_is_generated_from_the_registry():
    """docs/evaluators.md's table is the registry's reference, one row per built-in."""
    text = (DOCS / "evaluators.md").read_text(encoding="utf-8")
    begin = "<!-- generated: python -m eval_pipeline.evaluators -->\n"
    table = text[text.index(begin) + len(begin) : text.index("<!-- end of generated table -->")]
    assert table == registry.reference(), (
        "docs/evaluators.md is stale: paste `python -m eval_pipeline.evaluators` between "
        "its markers"
    )
    listed = re.findall(r"^\| `([a-z_]+)`", table, re.M)
    builtin = [e.name for e in (*registry.ITEM.values(), *registry.RUN.values())
               if registry.is_builtin(e)]  # fmt: skip
    assert sorted(listed) == sorted(builtin)


def test_source_documents_are_named_in_plain_words():
    """The source documents of the examples ("seed 000/001/004") are explained on one page
    and not used as names anywhere else in the docs."""
    for page in PAGES:
        if page.name == "examples.md":
            continue
        assert not re.search(r"seeds? 00\d", page.read_text(encoding="utf-8")), page.name
