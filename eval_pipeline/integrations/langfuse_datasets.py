"""Mirror a suite's golden dataset into a Langfuse dataset (idempotent upsert).

Item ids are deterministic (``<suite>-<case id>``), so syncing twice creates nothing new;
cases removed from the files are archived in Langfuse (kept for history, not left active).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langfuse import Langfuse
from langfuse.api.commons.errors.not_found_error import NotFoundError
from langfuse.api.commons.types.dataset_status import DatasetStatus

from eval_pipeline.core.cases import GoldenCase, dataset_version

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
    return f"{suite}-{case_id}"


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
    try:
        client.api.datasets.get(name)
        existing = {item.id: item for item in _items(client, name)}
    except NotFoundError:
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
        elif old.status == DatasetStatus.ACTIVE and _same(old, body):
            report.unchanged.append(key)
            continue
        else:
            report.updated.append(key)
        if not dry_run:
            client.create_dataset_item(dataset_name=name, id=key, status=DatasetStatus.ACTIVE,
                                       **body)  # fmt: skip
    for key, old in existing.items():
        if key in wanted or old.status == DatasetStatus.ARCHIVED:
            continue
        report.archived.append(key)
        if not dry_run:
            client.create_dataset_item(
                dataset_name=name, id=key, status=DatasetStatus.ARCHIVED, input=old.input,
                expected_output=old.expected_output, metadata=old.metadata,
            )  # fmt: skip
    return report


def _same(item: Any, body: dict[str, Any]) -> bool:
    return (item.input, item.expected_output, item.metadata) == (
        body["input"], body["expected_output"], body["metadata"],
    )  # fmt: skip


def _items(client: Langfuse, name: str) -> Iterator[Any]:
    page = 1
    while True:
        response = client.api.dataset_items.list(dataset_name=name, page=page, limit=PAGE_SIZE)
        yield from response.data
        if page >= (response.meta.total_pages or 0):
            return
        page += 1
