"""What a real Langfuse server checks and changes, for the test double (langfuse_server.py).

Each rule is taken from the server's source at v3.225.4 and v4.16.0 (langfuse/langfuse:
``packages/shared/src/server/ingestion/types.ts`` for scores, ``DatasetItemValidator.ts``
for dataset items, ``observation-field-groups.ts`` and the ``events_core`` views for v2
observations). Where the two releases differ, ``LangfuseVersion`` says how.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

ONE_MB = 1024 * 1024  # Next.js's default body limit ("1mb", bytes.js: 1,048,576 bytes)
LIMITS = {"1mb": ONE_MB, "4.5mb": int(4.5 * ONE_MB)}


@dataclass(frozen=True)
class LangfuseVersion:
    """How a self-hosted release answers with its default settings."""

    version: str
    # GET /v2/observations: v4's default; v3 only behind a preview flag (404 otherwise)
    v2_observations: bool
    # v3's "legacy" write mode serves GET /observations, /traces, /scores; v4's default
    # "events_only" answers 404 there (before auth) and refuses non-score ingestion events
    legacy_reads: bool
    # v2 field groups sent when `fields` is absent (v3: core only)
    default_fields: tuple[str, ...]

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def label(self) -> str:
        """The release, and "dual" for a v4 server that keeps v3's reads."""
        return f"{self.version}{'-dual' if self.major >= 4 and self.legacy_reads else ''}"


V3 = LangfuseVersion("3.225.4", v2_observations=False, legacy_reads=True,
                     default_fields=("core",))  # fmt: skip
V4 = LangfuseVersion("4.16.0", v2_observations=True, legacy_reads=False,
                     default_fields=("core", "basic"))  # fmt: skip
SUPPORTED = (V3, V4)
# v4 in its dual write mode (LANGFUSE_MIGRATION_V4_WRITE_MODE=dual, a migration from v3):
# v3's reads, dataset runs and ingestion events are served as well; seen on a real 4.16.0
# (GET /api/public/traces 200, POST dataset-run-items stores the run)
V4_DUAL = LangfuseVersion("4.16.0", v2_observations=True, legacy_reads=True,
                          default_fields=("core", "basic"))  # fmt: skip

EVENTS_ONLY_404 = (
    "This endpoint is not available on deployments running in Langfuse v4 events_only mode. "
    "Learn more about Langfuse v4 at: https://langfuse.com/docs/v4"
)
V2_OBSERVATIONS_404 = (
    "The observations v2 API is only available in a Langfuse v4 write mode. "
    "Learn more at: https://langfuse.com/docs/v4"
)

# --- scores (PostScoresBody / the score-create ingestion event) -----------------------------
SCORE_KEYS = ("id", "name", "value", "traceId", "sessionId", "datasetRunId", "observationId",
              "comment", "metadata", "environment", "source", "dataType", "configId",
              "queueId", "executionTraceId")  # fmt: skip
DATA_TYPES = ("NUMERIC", "CATEGORICAL", "BOOLEAN", "CORRECTION", "TEXT")
REFERENCE_RULE = (
    "Provide exactly one of the following: traceId (with optional observationId), "
    "sessionId or datasetRunId. ObservationId requires traceId."
)


def issue(path: list[Any], message: str, code: str = "invalid_type") -> dict[str, Any]:
    """One zod issue as the server reports it in ``error``."""
    return {"code": code, "path": path, "message": message}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else "object"


def score_issues(body: Any) -> list[dict[str, Any]]:
    """Why the server would refuse this score (empty: it takes it)."""
    if not isinstance(body, dict):
        message = f"Invalid input: expected object, received {_kind(body)}"
        return [issue([], message), issue([], message)]  # an intersection reports it twice
    found: list[dict[str, Any]] = []
    if not isinstance(body.get("name"), str) or not body["name"]:
        found.append(issue(["name"], "Invalid input: expected a non-empty string"))
    if (
        "id" in body
        and body["id"] is not None
        and (not isinstance(body["id"], str) or not 1 <= len(body["id"]) <= 800)
    ):
        found.append(issue(["id"], "Invalid input: expected a string of 1 to 800 characters"))
    kind, value = body.get("dataType"), body.get("value")
    if kind is not None and kind not in DATA_TYPES:
        found.append(issue(["dataType"], "No matching discriminator", "invalid_union"))
    elif kind in ("NUMERIC", "BOOLEAN") and _kind(value) != "number":
        found.append(issue(["value"], f"Invalid input: expected number, received {_kind(value)}"))
    elif kind == "BOOLEAN" and value not in (0, 1):
        found.append(issue(["value"], "Value must be a number equal to either 0 or 1 for "
                           "data type BOOLEAN", "custom"))  # fmt: skip
    elif kind in ("CATEGORICAL", "CORRECTION", "TEXT") and not isinstance(value, str):
        found.append(issue(["value"], f"Invalid input: expected string, received {_kind(value)}"))
    elif kind == "TEXT" and not 1 <= len(value) <= 500:
        found.append(issue(["value"], "Too big: expected string to have <=500 characters"))
    elif kind is None and _kind(value) not in ("number", "string"):
        found.append(issue(["value"], f"Invalid input: expected string, received {_kind(value)}",
                           "invalid_union"))  # fmt: skip
    if "comment" in body and body["comment"] is not None and not isinstance(body["comment"], str):
        found.append(issue(["comment"], "Invalid input: expected string"))
    refs = [bool(body.get(k)) for k in ("traceId", "sessionId", "datasetRunId")]
    if sum(refs) != 1 or (body.get("observationId") and not body.get("traceId")):
        found.append(issue(["traceId", "sessionId", "datasetRunId", "observationId"],
                           REFERENCE_RULE, "custom"))  # fmt: skip
    return found


def stored_score(body: dict[str, Any], score_id: str, version: LangfuseVersion = V4) -> dict:
    """The score as kept: unknown keys dropped (zod strips them; e.g. ``timestamp``), its
    environment as public ingestion keeps it (``public_environment``)."""
    kept = {k: body[k] for k in SCORE_KEYS if k in body}
    environment = public_environment(kept.get("environment"), version)
    return {**kept, "id": score_id, "environment": environment,
            "source": kept.get("source") or "API"}  # fmt: skip


# --- environments (PublicEnvironmentName, packages/shared/src/server/ingestion/types.ts) ---
DEFAULT_ENVIRONMENT = "default"
RESERVED_PREFIX = {3: re.compile(r"^langfuse[-_]?"), 4: re.compile(r"^(?:langfuse[-_]?)+")}


def public_environment(value: Any, version: LangfuseVersion = V4) -> str:
    """The environment an SDK's (or the public API's) event is kept in: lowercased, the
    leading ``langfuse`` (with an optional ``-``/``_``) stripped, since that prefix is
    Langfuse's own traffic's (v3.225.4 strips it once, v4.16.0 as often as it repeats), cut
    at 40 characters; ``default`` when absent or when what is left is empty or holds other
    characters than ``[a-z0-9-_]``. Both the score events and the OTel spans go through it
    (OtelIngestionProcessor.extractEnvironment)."""
    if not isinstance(value, str):
        return DEFAULT_ENVIRONMENT
    kept = RESERVED_PREFIX[min(version.major, 4)].sub("", value.lower())[:40]
    return kept if kept and re.fullmatch(r"[a-z0-9_-]+", kept) else DEFAULT_ENVIRONMENT


def home_dashboard_shows(environment: str) -> bool:
    """Whether the Home dashboard's environment filter selects ``environment`` by default
    (useEnvironmentFilter.tsx, v4.16.0: every environment but Langfuse's own ``langfuse-*``;
    the tables' sidebars hide ``sdk-experiment`` too, DEFAULT_SIDEBAR_HIDDEN_ENVIRONMENTS,
    the dashboard does not)."""
    return not environment.startswith("langfuse-")


# --- score configs -------------------------------------------------------------------------
# PostScoreConfigBody (packages/shared/src/features/scores/scoreConfigTypes.ts): NUMERIC with
# optional minValue < maxValue; CATEGORICAL with categories, an array of {label (non-empty),
# value (number)} with unique labels and unique values; BOOLEAN without categories (the route
# fills in True = 1, False = 0: web/src/pages/api/public/score-configs/index.ts).
def score_config_issues(body: Any) -> list[dict[str, Any]]:
    """Why POST /api/public/score-configs would answer 400 (empty: it creates it)."""
    if not isinstance(body, dict):
        return [issue([], f"Invalid input: expected object, received {_kind(body)}")]
    found: list[dict[str, Any]] = []
    if not isinstance(body.get("name"), str):
        found.append(issue(["name"], "Invalid input: expected string"))
    kind, categories = body.get("dataType"), body.get("categories")
    if kind not in ("NUMERIC", "CATEGORICAL", "BOOLEAN"):
        return [*found, issue(["dataType"], "No matching discriminator", "invalid_union")]
    if kind == "CATEGORICAL":
        pairs = categories if isinstance(categories, list) else None
        if pairs is None or not all(
            isinstance(c, dict) and isinstance(c.get("label"), str) and c["label"]
            and _kind(c.get("value")) == "number" for c in pairs
        ):  # fmt: skip
            found.append(issue(["categories"], "Category must be an array of objects with "
                               "label value pairs, where labels and values are unique.",
                               "custom"))  # fmt: skip
        elif len({c["label"] for c in pairs}) != len(pairs):
            found.append(issue(["categories"], "Duplicate category label", "custom"))
        elif len({c["value"] for c in pairs}) != len(pairs):
            found.append(issue(["categories"], "Duplicate category value", "custom"))
    elif categories is not None:
        found.append(issue(["categories"], "Invalid input: expected undefined"))
    low, high = body.get("minValue"), body.get("maxValue")
    if kind == "NUMERIC" and low is not None and high is not None and high <= low:
        found.append(issue([], "Maximum value must be greater than Minimum value", "custom"))
    return found


def config_problem(score: dict[str, Any], config: dict[str, Any] | None) -> str | None:
    """Why the worker drops a score with a configId (validateAndInflateScore and
    validateConfigAgainstBody, packages/shared/src/server/ingestion/
    validateAndInflateScore.ts; ScorePropsAgainstConfig, .../scores/interfaces/ingestion/
    validation.ts). The name is taken from the config; None: the score is kept."""
    if config is None:
        return "The configId you provided does not match a valid config in this project"
    kind, value = score.get("dataType"), score.get("value")
    if kind and kind != config["dataType"]:
        return f"Data type mismatch based on config: expected {config['dataType']}, got {kind}"
    if config["isArchived"]:
        return "Config is archived and cannot be used to create new scores."
    if config["dataType"] == "CATEGORICAL":
        if not isinstance(value, str) or value not in {c["label"] for c in config["categories"]}:
            return f"Value {value} does not map to a valid category. Pass a valid category value."
    elif config["dataType"] == "BOOLEAN":
        if value not in (0, 1):
            return "Value must be either 0 or 1"
    elif _kind(value) != "number":
        return "Ingested score body not valid against provided config data type."
    else:
        low, high = config.get("minValue"), config.get("maxValue")
        if high is not None and value > high:
            return f"Value exceeds maximum value of {high} defined in config"
        if low is not None and value < low:
            return f"Value is below minimum value of {low} defined in config"
    return None


# --- ingestion events ----------------------------------------------------------------------
ISO_WITH_OFFSET = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def event_error(event: Any) -> str | None:
    """Why one ingestion event fails the base schema (id, timestamp with offset, type)."""
    if not isinstance(event, dict):
        return "Invalid input: expected object"
    if not isinstance(event.get("id"), str) or not 1 <= len(event["id"]) <= 800:
        return "id: Invalid input: expected a string of 1 to 800 characters"
    if not isinstance(event.get("timestamp"), str) or not ISO_WITH_OFFSET.match(event["timestamp"]):
        return "timestamp: Invalid ISO datetime"
    if not isinstance(event.get("type"), str):
        return "type: Invalid input"
    return None


# --- dataset items (DatasetItemValidator.normalize, sanitizeControlChars) ------------------
CONTROL_CHARS = re.compile("[\u0000-\u0008\u000b\u000e-\u001f\u007f-\u009f]")


def _sanitised(value: Any) -> Any:
    if isinstance(value, str):
        return CONTROL_CHARS.sub("", value)
    if isinstance(value, list):
        return [_sanitised(v) for v in value]
    if isinstance(value, dict):
        return {k: _sanitised(v) for k, v in value.items()}  # keys are kept as sent
    return value


def normalised_item_field(value: Any) -> Any:
    """``""`` becomes null, a string holding JSON becomes that JSON, control characters
    are removed from every string value."""
    if value == "":
        return None
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    return _sanitised(value)


# --- v2 observations -----------------------------------------------------------------------
FIELD_GROUPS: dict[str, tuple[str, ...]] = {
    "core": ("id", "traceId", "startTime", "endTime", "projectId", "parentObservationId",
             "type"),
    "basic": ("name", "level", "statusMessage", "version", "environment", "bookmarked",
              "public", "userId", "sessionId", "isRootObservation"),
    "time": ("completionStartTime", "createdAt", "updatedAt"),
    "io": ("input", "output"),
    "metadata": ("metadata",),
    "model": ("providedModelName", "internalModelId", "modelParameters"),
    "usage": ("usageDetails", "costDetails", "totalCost", "usagePricingTierName"),
    "prompt": ("promptId", "promptName", "promptVersion"),
    "metrics": ("latency", "timeToFirstToken"),
    "trace_context": ("tags", "release", "traceName"),
}  # fmt: skip
ENRICHMENT = ("modelId", "inputPrice", "outputPrice", "totalPrice")  # always present
METADATA_VALUE_CHARS = 200  # events_core keeps leftUTF8(value, 200) of each metadata value


def requested_groups(fields: str | None, version: LangfuseVersion) -> list[str]:
    if not fields:
        return list(version.default_fields)
    groups = [g.strip() for g in fields.split(",") if g.strip() in FIELD_GROUPS]  # unknown: dropped
    return ["core", *[g for g in groups if g != "core"]]


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _parsed(text: str) -> Any:
    """parseJsonPrioritised: JSON when the text parses, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def v2_row(observation: dict[str, Any], groups: list[str], *, full_metadata: bool) -> dict:
    """An observation as GET /v2/observations answers: only the requested groups, IO as
    raw strings, metadata values cut at 200 characters unless read from the full table."""
    row: dict[str, Any] = dict.fromkeys(ENRICHMENT)
    for group in groups:
        for key in FIELD_GROUPS[group]:
            row[key] = observation.get(key)
    if "io" in groups:
        row["input"], row["output"] = (_as_text(observation.get(k)) for k in ("input", "output"))
    if "metadata" in groups and isinstance(observation.get("metadata"), dict):
        row["metadata"] = {
            key: _parsed(text if full_metadata else text[:METADATA_VALUE_CHARS])
            if (text := _as_text(value)) is not None else None
            for key, value in observation["metadata"].items()
        }  # fmt: skip
    return row


V1_OBSERVATION_KEYS = (
    "id", "projectId", "traceId", "parentObservationId", "name", "type", "environment",
    "startTime", "endTime", "version", "input", "output", "metadata", "level",
    "statusMessage", "model", "modelParameters", "completionStartTime", "usageDetails",
    "costDetails", "latency", "timeToFirstToken",
)  # fmt: skip


def v1_row(observation: dict[str, Any]) -> dict[str, Any]:
    """An observation as GET /observations (v1) answers: IO parsed, no trace-level fields."""
    row = {k: observation.get(k) for k in V1_OBSERVATION_KEYS}
    for key in ("input", "output"):
        if isinstance(row[key], str):
            row[key] = _parsed(row[key])
    row["model"] = observation.get("providedModelName")
    return row


def finite_json(raw: bytes) -> Any:
    """JSON.parse: NaN and Infinity are not JSON (Python's json accepts them)."""

    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(raw, parse_constant=refuse)


# --- GET /v2/observations?filter=… ----------------------------------------------------------
# The filter's shape, its types and their operators, and the columns: the API spec, as the
# SDK's generated client documents it (langfuse/api/observations/client.py, get_many's
# ``filter``; generated from the server's public API definition). "When provided, this
# takes precedence over query parameter filters."
FILTER_OPERATORS: dict[str, tuple[str, ...]] = {
    "datetime": (">", "<", ">=", "<="),
    "string": ("=", "contains", "does not contain", "starts with", "ends with", "matches"),
    "stringOptions": ("any of", "none of"),
    "categoryOptions": ("any of", "none of"),
    "arrayOptions": ("any of", "none of", "all of"),
    "number": ("=", ">", "<", ">=", "<="),
    "stringObject": ("=", "contains", "does not contain", "starts with", "ends with", "matches",
                     "is set", "is not set"),
    "numberObject": ("=", ">", "<", ">=", "<="),
    "boolean": ("=", "<>"),
    "null": ("is null", "is not null"),
}  # fmt: skip
FILTER_COLUMNS = (
    "id", "type", "name", "traceId", "startTime", "endTime", "environment", "level",
    "statusMessage", "version", "userId", "sessionId", "isRootObservation", "traceName",
    "traceTags", "tags", "latency", "timeToFirstToken", "tokensPerSecond", "inputTokens",
    "outputTokens", "totalTokens", "tokens", "inputCost", "outputCost", "totalCost",
    "providedModelName", "promptName", "promptVersion", "metadata",
)  # fmt: skip
# The columns this double evaluates; a filter on another (valid) column is the double's gap,
# answered 501 so that a test notices rather than reading an unfiltered page.
EVALUATED_COLUMNS = ("id", "type", "name", "traceId", "startTime", "environment",
                     "isRootObservation", "traceName")  # fmt: skip


def filter_issues(text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The parsed conditions, or the issues a 400 names (the server validates the filter
    with zod before any query)."""
    try:
        conditions = json.loads(text)
    except ValueError:
        return [], [issue(["filter"], "Invalid JSON in filter parameter", "custom")]
    if not isinstance(conditions, list):
        return [], [issue(["filter"], "Expected array, received " + _kind(conditions))]
    problems = []
    for i, c in enumerate(conditions):
        if not isinstance(c, dict):
            problems.append(issue(["filter", i], "Expected object"))
            continue
        kind, column, operator = c.get("type"), c.get("column"), c.get("operator")
        if kind not in FILTER_OPERATORS:
            problems.append(issue(["filter", i, "type"], f"Invalid filter type {kind!r}"))
        elif operator not in FILTER_OPERATORS[kind]:
            problems.append(issue(["filter", i, "operator"],
                                  f"Invalid operator {operator!r} for type {kind}"))  # fmt: skip
        if column not in FILTER_COLUMNS:
            problems.append(issue(["filter", i, "column"], f"Invalid column {column!r}"))
        if kind != "null" and "value" not in c:
            problems.append(issue(["filter", i, "value"], "Required"))
    return conditions, problems


def filter_matches(row: dict[str, Any], condition: dict[str, Any]) -> bool:
    """One condition on one observation (``row`` carries ``traceName``)."""
    value, wanted, operator = (
        row.get(condition["column"]),
        condition.get("value"),
        condition["operator"],
    )
    kind = condition["type"]
    if kind == "datetime":
        if value is None:
            return False
        left, right = _instant(value), _instant(wanted)
        return {">": left > right, "<": left < right, ">=": left >= right,
                "<=": left <= right}[operator]  # fmt: skip
    if kind in ("stringOptions", "categoryOptions"):
        inside = value in (wanted or [])
        return inside if operator == "any of" else not inside
    if kind == "boolean":
        same = bool(value) == bool(wanted)
        return same if operator == "=" else not same
    if kind == "string" and operator == "=":
        return value == wanted
    raise NotImplementedError(f"the test server does not evaluate {kind} {operator!r}")


def _instant(text: Any) -> datetime:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
