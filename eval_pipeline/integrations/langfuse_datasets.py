"""Mirror a suite's golden dataset into a Langfuse dataset (idempotent upsert).

Item ids are deterministic (``<suite>-<case id>``), so syncing twice creates nothing new;
cases removed from the files are archived in Langfuse (kept for history, not left active).
Langfuse lists only active items, so a case added back after it was archived is reported
as created (its old item is reactivated under the same id).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from langfuse import Langfuse
from langfuse.api.commons.types.dataset_status import DatasetStatus
from langfuse.api.core.api_error import ApiError

from eval_pipeline.core.suites.cases import (
    DatasetError,
    GoldenCase,
    LangfuseDatasetRef,
    dataset_version,
)

PAGE_SIZE = 100


@dataclass
class SyncReport:
    dataset: str
    dataset_version: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {k: len(getattr(self, k)) for k in ("created", "updated", "unchanged", "archived")}


def dataset_name(suite: str) -> str:
    return f"eval-pipeline/{suite}"


def item_id(suite: str, case_id: str) -> str:
    """A dataset item id unique in the project (Langfuse answers 409 to an id another
    dataset holds): a suite name never holds ':', so no two (suite, case) pairs meet.
    (``<suite>-<case>`` did: suite "a-b" case "c" and suite "a" case "b-c".)"""
    return f"{suite}:{case_id}"


def _body(case: GoldenCase) -> dict[str, Any]:
    return {
        "input": case.input,
        "expected_output": case.expected_output,
        "metadata": {"case_id": case.id, **case.metadata.model_dump()},
    }


def sync_dataset(
    client: Langfuse, suite: str, cases: Sequence[GoldenCase], *, dry_run: bool = False
) -> SyncReport:
    name = dataset_name(suite)
    report = SyncReport(name, dataset_version(cases))
    if exists(client, name):
        existing = {item.id: item for item in _items(client, name)}
    else:
        existing = {}
        if not dry_run:
            client.create_dataset(
                name=name,
                description=f"Golden cases of the {suite} suite (synced by eval-pipeline)",
                metadata={"suite": suite},
            )
    wanted = {item_id(suite, c.id): c for c in cases}
    for key, case in wanted.items():
        body = _body(case)
        old = existing.get(key)
        if old is None:
            report.created.append(key)
        elif _same(old, body):
            report.unchanged.append(key)
            continue
        else:
            report.updated.append(key)
        if not dry_run:
            client.create_dataset_item(dataset_name=name, id=key, status=DatasetStatus.ACTIVE,
                                       **body)  # fmt: skip
    for key, old in existing.items():  # (listed items are all active)
        if key in wanted:
            continue
        report.archived.append(key)
        if not dry_run:
            client.create_dataset_item(
                dataset_name=name, id=key, status=DatasetStatus.ARCHIVED, input=old.input,
                expected_output=old.expected_output, metadata=old.metadata,
            )  # fmt: skip
    return report


def exists(client: Langfuse, name: str) -> bool:
    """Whether the dataset exists. The name goes in the path encoded (our names hold a
    ``/``): the generated API client does not encode path parameters, and the route is one
    segment, so an unencoded name reaches no route (an HTML 404, not a NotFoundError)."""
    try:
        client.api.datasets.get(quote(name, safe=""))
    except ApiError as exc:
        if exc.status_code == 404:
            return False
        raise
    return True


# What Langfuse removes from stored strings (DatasetItemValidator: PostgreSQL TEXT cannot
# hold them); \t, \n and \r are kept.
CONTROL_CHARS = re.compile("[\u0000-\u0008\u000b\u000e-\u001f\u007f-\u009f]")


def as_stored(value: Any) -> Any:
    """A field as Langfuse stores it: "" becomes null, a string holding JSON becomes that
    JSON, control characters are removed from every string. Comparing stored items with
    this (not with what we send) keeps a case with such characters "unchanged"."""
    if value == "":
        return None
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    return _without_control_chars(value)


def _without_control_chars(value: Any) -> Any:
    if isinstance(value, str):
        return CONTROL_CHARS.sub("", value)
    if isinstance(value, list):
        return [_without_control_chars(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_control_chars(v) for k, v in value.items()}
    return value


def _same(item: Any, body: dict[str, Any]) -> bool:
    return (item.input, item.expected_output, item.metadata) == (
        as_stored(body["input"]), as_stored(body["expected_output"]),
        as_stored(body["metadata"]),
    )  # fmt: skip


def _items(client: Langfuse, name: str, *, version: datetime | None = None) -> Iterator[Any]:
    page = 1
    while True:
        response = client.api.dataset_items.list(
            dataset_name=name, page=page, limit=PAGE_SIZE, version=version
        )
        yield from response.data
        if page >= (response.meta.total_pages or 0):
            return
        page += 1


# --- a Langfuse dataset as a suite's case source ----------------------------------------
# Item metadata keys: ``case_id`` (the case id; default: the item id), ``category``,
# ``difficulty``, ``tier`` (as in a case file's ``metadata:``; extra keys are kept).


@dataclass(frozen=True)
class LinkedDataset:
    """The Langfuse dataset a run's items are linked to, and each case's item id in it."""

    name: str
    items: dict[str, str]  # case id → dataset item id


def linked_items(
    client: Langfuse, suite: str, cases: Sequence[GoldenCase],
    ref: LangfuseDatasetRef | None = None,
) -> LinkedDataset:  # fmt: skip
    """Where a run's items are linked: a ``langfuse:`` suite's own dataset and its items
    (each case's item found by the rule ``fetch_raw_cases`` reads: metadata ``case_id``,
    else the item id), nothing written; any other suite's cases synced into
    ``eval-pipeline/<suite>`` first (``sync_dataset``)."""
    if ref is None:
        sync_dataset(client, suite, cases)
        return LinkedDataset(dataset_name(suite), {c.id: item_id(suite, c.id) for c in cases})
    version = datetime.fromisoformat(ref.version.replace("Z", "+00:00")) if ref.version else None
    found = {}
    for item in _items(client, ref.name, version=version):
        meta = item.metadata if isinstance(item.metadata, dict) else {}
        found[str(meta.get("case_id", item.id))] = item.id
    return LinkedDataset(ref.name, found)


def fetch_raw_cases(client: Langfuse, ref: LangfuseDatasetRef) -> list[tuple[str, Any]]:
    """The ACTIVE items of ``ref`` as (location, raw case) pairs for ``validate_cases``.
    Archived items are not listed by the server (GET /api/public/dataset-items lists only
    ACTIVE ones), and are skipped here too should a server list them. A dataset that does
    not exist is a DatasetError naming it."""
    origin = f"Langfuse dataset {str(ref)!r}"
    if not exists(client, ref.name):
        raise DatasetError(
            [
                f"{origin}: no such dataset in the Langfuse project (404); "
                "create it in the Langfuse UI or fix the suite's 'dataset:'"
            ]
        )
    version = datetime.fromisoformat(ref.version.replace("Z", "+00:00")) if ref.version else None
    raws: list[tuple[str, Any]] = []
    problems: list[str] = []
    for item in _items(client, ref.name, version=version):
        if str(getattr(item, "status", "ACTIVE")).upper().endswith("ARCHIVED"):
            continue
        where = f"{origin} item '{item.id}'"
        created = getattr(item, "created_at", None)
        if version is not None and created is not None and created > version:
            # A server without dataset versions ignores ``version`` and answers the latest
            # items (web/src/pages/api/public/dataset-items/index.ts before versions: its
            # GET reads only datasetName, sourceTraceId, sourceObservationId, page, limit);
            # an item created after the pinned time shows it. Never run on the latest
            # silently.
            raise DatasetError([
                f"{where}: created {created.isoformat()}, after the pinned version "
                f"{ref.version}: this Langfuse server does not serve dataset versions; "
                "upgrade it, or drop '@VERSION' from the suite's 'dataset:'"
            ])  # fmt: skip
        if item.input is None:
            problems.append(f"{where}: field 'input': missing; give the item an input object "
                            "in Langfuse or archive it")  # fmt: skip
            continue
        meta = dict(item.metadata) if isinstance(item.metadata, dict) else {}
        case_id = meta.pop("case_id", item.id)  # (the rule of linked_items too)
        raws.append(
            (
                where,
                {
                    "id": case_id,
                    "input": item.input,
                    "expected_output": item.expected_output,
                    "metadata": meta,
                },
            )
        )
    if problems:
        raise DatasetError(problems)
    return raws
