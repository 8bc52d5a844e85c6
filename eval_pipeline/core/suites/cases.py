"""Golden cases: the file format, validation with actionable errors, dataset versions.

A suite's cases live in ``datasets/<suite>/cases*.yaml|yml|jsonl``. YAML files hold a
list of cases (or a mapping with a ``cases:`` list); JSONL files hold one case per line.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, overload

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eval_pipeline.core.errors import ConfigurationError, did_you_mean
from eval_pipeline.core.util import safe_yaml
from eval_pipeline.core.util.interrupts import PAUSED_FIELD, resume_problems

Tier = Literal["smoke", "full"]
TIERS: tuple[str, ...] = ("smoke", "full")
CASE_FILE_PATTERNS = ("cases*.yaml", "cases*.yml", "cases*.jsonl")
# Ids end up in partition-free places (store keys, JUnit names, Langfuse item ids).
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"


class CaseMetadata(BaseModel):
    model_config = ConfigDict(extra="allow")

    category: str = Field(min_length=1)
    difficulty: Literal["easy", "medium", "hard"]
    tier: Tier


class GoldenCase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=ID_PATTERN)
    input: dict[str, Any]
    expected_output: dict[str, Any] | None = None
    metadata: CaseMetadata

    @property
    def category(self) -> str:
        return self.metadata.category

    @property
    def tier(self) -> str:
        return self.metadata.tier

    def input_hash(self) -> str:
        return content_hash({"input": self.input, "expected_output": self.expected_output})


class DatasetError(ConfigurationError):
    """Raised when a dataset cannot be used; lists every problem found, not just the first."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        shown = "\n".join(f"  - {p}" for p in self.problems[:50])
        more = f"\n  … and {len(self.problems) - 50} more" if len(self.problems) > 50 else ""
        super().__init__(
            f"invalid golden dataset ({len(self.problems)} problem(s)):\n{shown}{more}\n"
            "Fix the file(s) named above and run again; nothing was evaluated."
        )


def content_hash(value: Any, length: int = 12) -> str:
    """Hash of the canonical JSON form (sorted keys, no whitespace)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:length]


def dataset_version(cases: Iterable[GoldenCase]) -> str:
    """Version of a dataset: hash of its cases' canonical content, independent of file layout
    (``CaseSet.version``)."""
    return CaseSet.of(cases).version


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass
class _Rows:
    """The storage of a ``CaseSet``: per case, what it holds (the UTF-8 JSON of a validated
    case, or a ``GoldenCase`` given as one), its id, category and tier."""

    held: list[bytes | GoldenCase] = dataclasses.field(default_factory=list)
    ids: list[str] = dataclasses.field(default_factory=list)
    categories: list[str] = dataclasses.field(default_factory=list)
    tiers: list[str] = dataclasses.field(default_factory=list)

    def add(self, case: GoldenCase, held: bytes | GoldenCase) -> None:
        self.held.append(held)
        self.ids.append(case.id)
        self.categories.append(sys.intern(case.category))  # (a few, shared by every case)
        self.tiers.append(sys.intern(case.tier))

    def case(self, index: int) -> GoldenCase:
        held = self.held[index]
        if isinstance(held, GoldenCase):
            return held
        return GoldenCase.model_validate(json.loads(held))

    def canonical(self, index: int) -> str:
        """The case's canonical JSON (sorted keys), as ``dataset_version`` hashes it."""
        held = self.held[index]
        return _canonical(held.model_dump(mode="json") if isinstance(held, GoldenCase)
                          else json.loads(held))  # fmt: skip


def compact(case: GoldenCase) -> bytes:
    """A validated case as ``CaseSet`` holds it: the UTF-8 JSON of its validated form
    (``model_dump``, keys in their order), about the size of its line in a JSONL file. A
    string holding a lone UTF-16 surrogate (``"\\ud800"`` in JSON) is no text: it raises
    UnicodeEncodeError."""
    text = json.dumps(case.model_dump(mode="json"), separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


class CaseSet(Sequence[GoldenCase]):
    """A suite's validated cases, held compactly: each case as the UTF-8 JSON of its
    validated form (``compact``: about the size of its line, where the case as Python
    objects takes 5–10 times that), its id, category and tier at hand. A case is made a
    ``GoldenCase`` again each time it is read (``cases[i]``, iterating); what needs only
    ids, categories or tiers (a tier's selection, the draw order, the dataset version,
    category floors, absence coverage) reads them without. A slice, a tier or an order of
    it is a view on the same rows. It pickles (a run's later steps get it: ``RunRef``)."""

    def __init__(self, rows: _Rows | None = None, order: Sequence[int] | None = None) -> None:
        self._rows = rows if rows is not None else _Rows()
        self._order: Sequence[int] = range(len(self._rows.ids)) if order is None else order

    @classmethod
    def of(cls, cases: Iterable[GoldenCase]) -> CaseSet:
        """``cases`` as a CaseSet: itself if it is one, else one holding the cases as given
        (nothing copied)."""
        if isinstance(cases, CaseSet):
            return cases
        rows = _Rows()
        for case in cases:
            rows.add(case, case)
        return cls(rows)

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> GoldenCase: ...

    @overload
    def __getitem__(self, index: slice) -> CaseSet: ...

    def __getitem__(self, index: int | slice) -> GoldenCase | CaseSet:
        if isinstance(index, slice):
            return CaseSet(self._rows, self._order[index])
        return self._rows.case(self._order[index])

    def __iter__(self) -> Iterator[GoldenCase]:
        return (self._rows.case(i) for i in self._order)

    def __repr__(self) -> str:
        return f"CaseSet({len(self)} cases)"

    def __eq__(self, other: object) -> bool:
        """Equal to a sequence (a list, another CaseSet) of the same cases in this order."""
        if not isinstance(other, CaseSet | list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # (compared by content, as a list: no hash)

    @property
    def ids(self) -> list[str]:
        return [self._rows.ids[i] for i in self._order]

    @property
    def categories(self) -> list[str]:
        return [self._rows.categories[i] for i in self._order]

    def of_tier(self, tier: str) -> CaseSet:
        """The cases whose tier is ``tier``, in this order."""
        tiers = self._rows.tiers
        return CaseSet(self._rows, [i for i in self._order if tiers[i] == tier])

    def with_ids(self, keep: Callable[[str], bool]) -> CaseSet:
        """The cases whose id ``keep`` keeps, in this order."""
        ids = self._rows.ids
        return CaseSet(self._rows, [i for i in self._order if keep(ids[i])])

    def ordered_by(self, key: Callable[[str], Any]) -> CaseSet:
        """The cases sorted by ``key`` of their id."""
        ids = self._rows.ids
        return CaseSet(self._rows, sorted(self._order, key=lambda i: key(ids[i])))

    def holding(self, name: str) -> Iterator[GoldenCase]:
        """The cases that may hold a key ``name`` somewhere; those held as JSON whose text
        does not are not made GoldenCases at all (reading one field of a large suite)."""
        wanted = json.dumps(name).encode("utf-8")
        for i in self._order:
            held = self._rows.held[i]
            if isinstance(held, GoldenCase) or wanted in held:
                yield self._rows.case(i)

    @cached_property
    def version(self) -> str:
        """The dataset version: a hash of the cases' canonical JSON (sorted keys, no
        whitespace) as one list in the order of their ids, computed a case at a time."""
        digest = hashlib.sha256(b"[")
        ids = self._rows.ids
        for n, i in enumerate(sorted(self._order, key=lambda i: ids[i])):
            digest.update((b"," if n else b"") + self._rows.canonical(i).encode("utf-8"))
        digest.update(b"]")
        return digest.hexdigest()[:12]


CaseValidator = Callable[[GoldenCase], list[tuple[str, str]]]
"""Suite-specific check: returns (field, problem) pairs for one valid-shaped case."""


@dataclass(frozen=True)
class FieldNeeds:
    """What a suite's evaluators read from its cases (evaluators/declare.py ``reads``)."""

    required: dict[str, tuple[str, ...]]  # "expected_output.x" (or "a|b") → who reads it
    known: frozenset[str] | None  # every field some evaluator reads; None: one does not say

    def problems(self, case: GoldenCase) -> list[tuple[str, str]]:
        """(field, problem) for each field an evaluator reads that the case lacks, with
        "did you mean" a near key of the case."""
        found: list[tuple[str, str]] = []
        for wanted, readers in self.required.items():
            options = wanted.split("|")
            if any(_has(case, path) for path in options):
                continue
            near = _near(case, options)
            hint = f" (did you mean {', '.join(repr(n) for n in near)}?)" if near else ""
            either = " or ".join(f"'{o}'" for o in options)
            verb = "reads" if len(readers) == 1 else "read"
            found.append((options[0], f"missing: {', '.join(readers)} {verb} {either}{hint}; "
                          "give it (an empty list when nothing is expected)"))  # fmt: skip
        return found

    def unknown(self, case: GoldenCase) -> list[tuple[str, str]]:
        """(field, note) for each ``expected_output`` key no evaluator reads (a typo, or an
        evaluator missing from the suite); nothing when an evaluator does not say."""
        if self.known is None:
            return []
        found = []
        for key in sorted((case.expected_output or {}).keys()):
            path = f"expected_output.{key}"
            if path in self.known or key == PAUSED_FIELD:  # (read by the runner)
                continue
            near = difflib.get_close_matches(path, sorted(self.known), n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            found.append((path, f"no evaluator of this suite reads it{hint}"))
        return found


def unknown_expected_tools(
    cases: Iterable[GoldenCase], offered: frozenset[str] | None, shown: int = 3
) -> list[str]:
    """One note for the names in the cases' ``expected_output.expected_tools`` that are
    neither a tool nor a handoff the agent offers (``offered``, read from the agent before
    it runs: agents/adapters/offered_tools.py), which no run can call: a misspelt name, or
    the handoff written as the agent's name. Nothing when the agent cannot say (None)."""
    if offered is None:
        return []
    where: dict[str, list[str]] = {}
    for case in CaseSet.of(cases).holding("expected_tools"):
        expected = case.expected_output if isinstance(case.expected_output, dict) else {}
        names = expected.get("expected_tools")
        for name in names if isinstance(names, list) else []:
            if isinstance(name, str) and name not in offered:
                where.setdefault(name, []).append(case.id)
    if not where:
        return []
    parts = []
    for name, ids in where.items():
        more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
        parts.append(f"{name!r} (case {', '.join(ids[:shown])}{more})"
                     f"{did_you_mean(name, offered)}")  # fmt: skip
    return [f"expected_tools names what is neither a tool nor a handoff the agent offers, "
            f"so no run can call it: {'; '.join(parts)}; it offers "
            f"{', '.join(sorted(offered))}"]  # fmt: skip


def _has(case: GoldenCase, path: str) -> bool:
    part, _, rest = path.partition(".")
    value: Any = (case.metadata.model_dump() if part == "metadata" else  # (only if asked)
                  {"input": case.input, "expected_output": case.expected_output}.get(part))
    for key in rest.split(".") if rest else ():
        if not isinstance(value, dict) or key not in value:
            return False
        value = value[key]
    return True


def _near(case: GoldenCase, options: Sequence[str]) -> list[str]:
    """Keys of the case near the missing field (a misspelled ``expected_tool``)."""
    head, _, _ = options[0].rpartition(".")
    section = head.partition(".")[0]
    holder = {"input": case.input, "expected_output": case.expected_output,
              "metadata": case.metadata.model_dump()}.get(section) or {}  # fmt: skip
    keys = sorted(holder) if isinstance(holder, dict) else []
    wanted = [o.rpartition(".")[2] for o in options]
    return sorted({m for w in wanted for m in difflib.get_close_matches(w, keys, n=1)})


def case_files(directory: Path) -> list[Path]:
    files = sorted({p for pattern in CASE_FILE_PATTERNS for p in directory.glob(pattern)})
    return [p for p in files if p.is_file()]


def load_cases(
    directory: Path,
    *,
    categories: Iterable[str] | None = None,
    validate: CaseValidator | None = None,
    notice: CaseValidator | None = None,
    warnings: list[str] | None = None,
) -> CaseSet:
    """Load and validate every case file of a suite; raise DatasetError listing all problems.
    ``notice`` finds what is worth saying but not refusing: it goes into ``warnings``. A
    JSONL file is read a line at a time, each case validated and kept compactly as it
    comes (``CaseSet``): memory grows with the cases' size, not with Python objects of
    every case at once."""
    if not directory.is_dir():
        raise DatasetError([f"{directory}: dataset folder not found"])
    files = case_files(directory)
    if not files:
        raise DatasetError(
            [f"{directory}: no case files (expected one of {', '.join(CASE_FILE_PATTERNS)})"]
        )
    problems: list[str] = []
    raws = (pair for path in files for pair in _read_raw_cases(path, problems))
    return validate_cases(raws, problems=problems, origin=", ".join(map(str, files)),
                          categories=categories, validate=validate, notice=notice,
                          warnings=warnings)  # fmt: skip


def validate_cases(
    raws: Iterable[tuple[str, Any]],
    *,
    origin: str,
    problems: list[str] | None = None,
    categories: Iterable[str] | None = None,
    validate: CaseValidator | None = None,
    notice: CaseValidator | None = None,
    warnings: list[str] | None = None,
) -> CaseSet:
    """Validate (location, raw case) pairs from any source (case files, a Langfuse dataset)
    the same way, one at a time; raise DatasetError listing all problems. ``origin`` names
    the source."""
    problems = problems if problems is not None else []
    rows = _Rows()
    seen: dict[str, str] = {}
    known = set(categories) if categories is not None else None
    for where, raw in raws:
        case = _parse_case(raw, where, problems)
        if case is None:
            continue
        label = f"{where} case '{case.id}'"
        if case.id in seen:
            first = seen[case.id]
            problems.append(f"{label}: field 'id': duplicate id, first defined at {first}")
            continue
        seen[case.id] = where
        if known is not None and case.category not in known:
            problems.append(
                f"{label}: field 'metadata.category': unknown category {case.category!r} "
                f"(known: {', '.join(sorted(known))})"
            )
        for field, message in interrupt_problems(case):
            problems.append(f"{label}: field '{field}': {message}")
        for field, message in validate(case) if validate else []:
            problems.append(f"{label}: field '{field}': {message}")
        if notice and warnings is not None:
            for field, message in notice(case):
                warnings.append(f"{label}: field '{field}': {message}")
        try:
            rows.add(case, compact(case))
        except UnicodeEncodeError as exc:
            problems.append(f"{label}: field '{_holding_surrogate(case)}': "
                            f"{exc.object[exc.start:exc.end]!r} is half of a UTF-16 "
                            "surrogate pair, not a character (\\ud800 to \\udfff alone in "
                            "JSON): write the character itself, or its pair")  # fmt: skip
    if not problems and not rows.ids:
        problems.append(f"{origin}: the dataset has no cases")
    if problems:
        raise DatasetError(problems)
    return CaseSet(rows)


def _holding_surrogate(case: GoldenCase) -> str:
    """The dotted path of a string (value or key) of ``case`` holding a lone
    surrogate; walked without recursion (a case may nest about 1,000 levels)."""
    stack: list[tuple[str, Any]] = [("", case.model_dump(mode="json"))]
    while stack:
        path, value = stack.pop()
        items = (value.items() if isinstance(value, dict) else
                 enumerate(value) if isinstance(value, list) else ())  # fmt: skip
        for key, inner in items:
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and not _is_text(key):
                return path or "(case)"
            if isinstance(inner, str) and not _is_text(inner):
                return where
            stack.append((where, inner))
    return "(case)"


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class LangfuseDatasetRef:
    """A suite's ``dataset: langfuse:NAME`` or ``langfuse:NAME@VERSION``: the items of a
    Langfuse dataset, the latest ones or as they were at VERSION, an ISO 8601 UTC timestamp
    (Langfuse versions dataset items by time: the SDK's ``dataset_items.list(version=…)``,
    langfuse/api/dataset_items/client.py in SDK 5.0.4)."""

    name: str
    version: str | None = None  # ISO 8601 timestamp as written, None: the latest items

    def __str__(self) -> str:
        return f"{LANGFUSE_PREFIX}{self.name}" + (f"@{self.version}" if self.version else "")


LANGFUSE_PREFIX = "langfuse:"


def parse_dataset_ref(text: str) -> LangfuseDatasetRef | None:
    """The Langfuse dataset a suite's ``dataset:`` names, None for a local folder; a
    malformed reference is a DatasetError saying what to write."""
    if not text.startswith(LANGFUSE_PREFIX):
        return None
    name, at, version = text[len(LANGFUSE_PREFIX) :].rpartition("@") if "@" in text else (
        text[len(LANGFUSE_PREFIX) :], "", "")  # fmt: skip
    usage = "write langfuse:NAME or langfuse:NAME@2026-01-31T00:00:00Z"
    if not name.strip():
        raise DatasetError([f"{text!r}: no dataset name ({usage})"])
    if at:
        try:
            stamp = datetime.fromisoformat(version.replace("Z", "+00:00"))
        except ValueError:
            stamp = None
        if stamp is None or stamp.tzinfo is None:
            raise DatasetError([f"{text!r}: version {version!r} is not an ISO 8601 UTC "
                                f"timestamp ({usage})"])  # fmt: skip
    return LangfuseDatasetRef(name, version or None)


def select_tier(cases: Sequence[GoldenCase], tier: str) -> list[GoldenCase]:
    """``smoke`` → the smoke cases; ``full`` → every case."""
    if tier not in TIERS:
        raise DatasetError([f"unknown tier {tier!r} (use one of: {', '.join(TIERS)})"])
    chosen = CaseSet.of(cases)
    selected = list(chosen if tier == "full" else chosen.of_tier("smoke"))
    if not selected:
        raise DatasetError([f"no cases match tier {tier!r}"])
    return selected


def _read_raw_cases(path: Path, problems: list[str]) -> Iterator[tuple[str, Any]]:
    """Yield (location, raw case) pairs; locations are 'file:line'. A JSONL file is read a
    line at a time; a YAML file whole."""
    if path.suffix == ".jsonl":
        yield from _read_jsonl(path, problems)
        return
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        problems.append(_not_utf8(path, exc, 0))
        return
    yield from _read_yaml(path, text, problems)


def _not_utf8(path: Path, exc: UnicodeDecodeError, offset: int) -> str:
    return f"{path}: not UTF-8 text ({exc.reason} at byte {offset + exc.start})"


def _jsonl_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line with its "\n") of a JSONL file, read a line at a time. JSON Lines
    ends records with "\n" only, and so does a binary file's iteration (str.splitlines()
    would also split inside strings holding U+0085, U+2028 and other Unicode line breaks,
    found by fuzzing; "\n" is never part of a multi-byte UTF-8 character)."""
    with path.open("rb") as lines:
        yield from enumerate(lines, start=1)


def _read_jsonl(path: Path, problems: list[str]) -> Iterator[tuple[str, Any]]:
    offset = 0  # a file that is not UTF-8 is refused whole, before any case of it is read
    for _, raw in _jsonl_lines(path):
        try:
            raw.decode("utf-8")  # (with its "\n": the error is the whole file's)
        except UnicodeDecodeError as exc:
            problems.append(_not_utf8(path, exc, offset))
            return
        offset += len(raw)
    for number, raw in _jsonl_lines(path):
        line = raw.decode("utf-8").removesuffix("\n")
        if not line.strip():
            continue
        try:
            yield f"{path}:{number}", safe_yaml.json_loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{number}: malformed JSON: {exc.msg} (column {exc.colno})")
        except ValueError as exc:  # (nested too deeply)
            problems.append(f"{path}:{number}: {exc}")


def _read_yaml(path: Path, text: str, problems: list[str]) -> list[tuple[str, Any]]:
    try:
        root, data = safe_yaml.compose_and_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problems.append(f"{where}: malformed YAML: {getattr(exc, 'problem', None) or exc}")
        return []
    if data is None or root is None:
        return []
    seq_node = root
    if isinstance(data, dict):
        if set(data) != {"cases"} or not isinstance(data["cases"], list):
            problems.append(f"{path}: expected a list of cases or a mapping with only 'cases:'")
            return []
        seq_node = next(v for k, v in root.value if k.value == "cases")
        data = data["cases"]
    if not isinstance(data, list):
        problems.append(f"{path}: expected a list of cases, got {type(data).__name__}")
        return []
    return [
        (f"{path}:{node.start_mark.line + 1}", raw)
        for node, raw in zip(seq_node.value, data, strict=True)
    ]


def interrupt_problems(case: GoldenCase) -> list[tuple[str, str]]:
    """A case's human-in-the-loop fields that cannot be used (core/util/interrupts.py)."""
    found = resume_problems(case.input)
    paused = (case.expected_output or {}).get(PAUSED_FIELD)
    if paused is not None and not isinstance(paused, bool):
        found.append(
            (
                f"expected_output.{PAUSED_FIELD}",
                f"true (the item must stop at an interrupt) or false; got {paused!r:.40}",
            )
        )
    return found


def _parse_case(raw: Any, where: str, problems: list[str]) -> GoldenCase | None:
    if not isinstance(raw, dict):
        problems.append(f"{where}: a case must be a mapping, got {type(raw).__name__}")
        return None
    label = f"{where} case {raw['id']!r}" if isinstance(raw.get("id"), str) else where
    try:
        return GoldenCase.model_validate(raw)
    except ValidationError as exc:
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "(case)"
            got = "" if err["type"] == "missing" else f" (got {_short(err.get('input'))})"
            problems.append(f"{label}: field '{field}': {err['msg']}{got}")
        return None


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
