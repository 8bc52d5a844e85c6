"""Score configs: every item score we send names its config (``configId``), matched among
the project's configs or created, so Langfuse shows our metrics with their type, and a
categorical metric with its categories, in its score views and annotation forms.

Read in Langfuse's sources (langfuse/langfuse):
- ``POST /api/public/score-configs`` (web/src/pages/api/public/score-configs/index.ts,
  ``PostScoreConfigBody`` in packages/shared/src/features/scores/scoreConfigTypes.ts):
  a NUMERIC config may bound its values, a CATEGORICAL one lists ``{label, value}`` pairs
  (labels unique, values unique), a BOOLEAN one gets True = 1 and False = 0; a config's
  name is at most 35 characters (the response schema), and names are not unique.
- A score with a ``configId`` is checked against the config in the ingestion worker
  (``validateAndInflateScore``, packages/shared/src/server/ingestion/
  validateAndInflateScore.ts): the data type must match, a category must be one of the
  labels, a number within the bounds. A score that fails is dropped there, after the API
  answered: so we only name a config whose rules our scores keep — never a NUMERIC config
  with bounds, and a categorical config that lists every category the suite's scale has.

Failing to read or create configs never fails a write-back: the scores go without one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eval_pipeline.core.scoring.categories import CategoryScale
from eval_pipeline.integrations.langfuse_client import LangfuseSettings

MAX_NAME = 35  # ScoreConfigBase.name
PAGE = 100  # the API's largest page
TIMEOUT_S = 10.0


def wanted_config(name: str, data_type: str, scale: CategoryScale | None) -> dict | None:
    """The config a metric's scores need (the POST body), or None when it has none we can
    keep to: a name too long, or a category metric without its scale."""
    if len(name) > MAX_NAME:
        return None
    if data_type == "CATEGORICAL":
        if scale is None:
            return None
        return {"name": name, "dataType": data_type,
                "categories": [{"label": c, "value": i} for i, c in enumerate(scale.known)],
                "description": f"eval-pipeline: categories of {name}"}  # fmt: skip
    return {"name": name, "dataType": data_type, "description": f"eval-pipeline: {name}"}


def matches(config: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """An existing config our scores can name: same name and type, not archived, no
    bounds, and for categories the same labels."""
    if config.get("isArchived") or config.get("name") != wanted["name"]:
        return False
    if config.get("dataType") != wanted["dataType"]:
        return False
    if config.get("minValue") is not None or config.get("maxValue") is not None:
        return False
    if wanted["dataType"] != "CATEGORICAL":
        return True
    labels = sorted(c.get("label") for c in config.get("categories") or [])
    return labels == sorted(c["label"] for c in wanted["categories"])


def with_configs(
    settings: LangfuseSettings, payloads: Mapping[str, dict[str, Any]],
    scales: Mapping[str, CategoryScale],
) -> dict[str, dict[str, Any]]:  # fmt: skip
    """``payloads`` with the ``configId`` of each item score's config (the run-level means
    and scores already naming one are left as they are); unchanged when Langfuse cannot
    list or create configs now."""
    kinds = {(p["name"], p["dataType"]) for p in payloads.values()
             if p.get("traceId") and not p.get("configId")}  # fmt: skip
    if not kinds:
        return dict(payloads)
    ids: dict[tuple[str, str], str] = {}
    try:
        with settings.http(TIMEOUT_S) as http:
            existing = _all_configs(http)
            for name, kind in sorted(kinds):
                wanted = wanted_config(name, kind, scales.get(name))
                if wanted is None:
                    continue
                found = next((c for c in existing if matches(c, wanted)), None)
                if found is None:
                    response = http.post("/api/public/score-configs", json=wanted)
                    if response.status_code != 200:
                        continue
                    found = response.json()
                    existing.append(found)
                ids[name, kind] = found["id"]
    except Exception:  # Langfuse trouble never fails a write-back
        return dict(payloads)
    return {key: {**p, "configId": ids[p["name"], p["dataType"]]}
            if (p.get("name"), p.get("dataType")) in ids and p.get("traceId") else p
            for key, p in payloads.items()}  # fmt: skip


def _all_configs(http: Any) -> list[dict[str, Any]]:
    configs: list[dict[str, Any]] = []
    page = 1
    while True:
        response = http.get("/api/public/score-configs", params={"page": page, "limit": PAGE})
        response.raise_for_status()
        body = response.json()
        configs += body.get("data") or []
        if page >= int((body.get("meta") or {}).get("totalPages") or 1):
            return configs
        page += 1
