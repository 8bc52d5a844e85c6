"""PASS, FAIL, UNDECIDED and not tested, each one look in Dagster, read as the UI reads it.

The demo and one label move (scripts/dagster_screenshots.py ``scenario``: per suite,
production PASS and staging FAIL; drive-thru's staging label moved to a new version, run
by the label sensor on a budget the gate cannot decide on: UNDECIDED), then
dagster-webserver on that instance: every check execution, run tag and partition status
through its GraphQL API, against each run's verdict in the results store."""

from __future__ import annotations

from collections import Counter

from eval_pipeline.core.scoring import checks
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.helpers import ROOT, load_module

RUNS = """{ runsOrError(filter: {pipelineName: "eval_job"}) { ... on Runs { results {
  runId status tags { key value } } } } }"""
RUNS_TAGGED = """query Tagged($value: String!) {
  runsOrError(filter: {tags: [{key: "eval/verdict", value: $value}]}) {
    ... on Runs { results { runId } } } }"""
EXECUTIONS = """query Executions($asset: String!, $name: String!) {
  assetCheckExecutions(assetKey: {path: [$asset]}, checkName: $name, limit: 200) {
    runId status partition evaluation { success severity description } } }"""
ASSET = """query Asset($asset: String!) { assetNodeOrError(assetKey: {path: [$asset]}) {
  ... on AssetNode {
    assetPartitionStatuses { ... on DefaultPartitionStatuses {
      materializedPartitions failedPartitions unmaterializedPartitions } }
    assetChecksOrError { ... on AssetChecks { checks { name partitionStatuses {
      ... on AssetCheckDefaultPartitionStatuses { succeededPartitions failedPartitions
        skippedPartitions executionFailedPartitions } } } } }
    assetMaterializations(limit: 200) { runId partition
      metadataEntries { label ... on MarkdownMetadataEntry { mdStr } } } } } }"""

# What Dagster shows of a check execution (its status, and its severity when it failed)
# for each finding: one look per finding, the description's first word saying which.
LOOKS = {("SUCCEEDED", None): {"PASS"}, ("FAILED", "ERROR"): {"FAIL"},
         ("FAILED", "WARN"): {"UNDECIDED", "WARN"}, ("SKIPPED", None): {"not tested"}}  # fmt: skip


def test_pass_fail_undecided_and_not_tested_each_have_their_look_in_dagster(tmp_path):
    shots = load_module(ROOT / "scripts" / "dagster_screenshots.py")
    env = shots.scenario(tmp_path)
    store = ResultsStore(f"sqlite:///{tmp_path / 'home' / 'results.sqlite'}")
    verdict_of = {run.dagster_run_id: said.verdict for run, said in store.latest_verdicts()}
    partition_of = {run.dagster_run_id: f"{run.suite}/{run.prompt_version}"
                    for run, _ in store.latest_verdicts()}  # fmt: skip
    assert sorted(Counter(verdict_of.values()).items()) == [
        ("FAIL", 5), ("PASS", 5), ("UNDECIDED", 2)]  # fmt: skip
    names = {"eval_summary": [spec.name for spec in checks.checks()],
             "failure_rerun": ["rerun_fixes"]}  # fmt: skip
    with shots.webserver(tmp_path, env) as url:
        runs = shots.graphql(url, RUNS)["runsOrError"]["results"]
        tagged = {v: {r["runId"] for r in shots.graphql(url, RUNS_TAGGED, {"value": v})[
            "runsOrError"]["results"]} for v in ("PASS", "FAIL", "UNDECIDED")}  # fmt: skip
        executions = {(a, n): shots.graphql(url, EXECUTIONS, {"asset": a, "name": n})[
            "assetCheckExecutions"] for a, found in names.items() for n in found}  # fmt: skip
        nodes = {a: shots.graphql(url, ASSET, {"asset": a})["assetNodeOrError"] for a in names}

    # Runs list and run page: a verdict reached is no failed run; its tag says which, and
    # the Runs list filters by it (before: no tag, and UNDECIDED a failure with a trace)
    assert {r["runId"] for r in runs} == set(verdict_of)
    for run in runs:
        tags = {t["key"]: t["value"] for t in run["tags"]}
        suite, version = partition_of[run["runId"]].split("/")
        assert run["status"] == "SUCCESS", run
        assert tags["eval/verdict"] == verdict_of[run["runId"]], tags
        assert (tags["eval/suite"], tags["eval/version"]) == (suite, version), tags
        assert tags["eval/trigger"] in ("demo", "prompt_label_sensor"), tags
    assert tagged == {v: {r for r, said in verdict_of.items() if said == v} for v in tagged}

    # Every check execution: its look is its finding, and the findings agree with the run
    untested = {(a, m["runId"]): e["mdStr"] for a in names
                for m in nodes[a]["assetMaterializations"] for e in m["metadataEntries"]
                if e["label"] == "checks_not_tested"}  # fmt: skip
    found: dict[str, list[str]] = {}
    looks: Counter[str] = Counter()
    for (asset, name), done in executions.items():
        for execution in done:
            evaluation = execution["evaluation"]
            failed = evaluation is not None and not evaluation["success"]
            look = (execution["status"], evaluation["severity"] if failed else None)
            assert look in LOOKS, (asset, name, execution)  # never "Execution failed"
            if evaluation is None:
                label = "not tested"  # and the materialization says why
                assert f"**{name}**" in untested[(asset, execution["runId"])]
            else:
                label = evaluation["description"].split(" — ")[0]
                assert evaluation["description"].startswith(
                    f"{label} — {execution['partition'].replace('/', ' ')}: ")
            assert label in LOOKS[look], (asset, name, look, evaluation)
            found.setdefault(execution["runId"], []).append(label)
            looks[label] += 1
    assert {"PASS", "FAIL", "UNDECIDED", "not tested"} <= set(looks), looks
    for run_id, labels in found.items():
        verdict = verdict_of[run_id]
        assert ("FAIL" in labels) == (verdict == "FAIL"), (verdict, labels)
        assert ("UNDECIDED" in labels) == (verdict == "UNDECIDED"), (verdict, labels)

    # Each check's partitions view: a partition is its latest finding (PASS succeeded, FAIL
    # and UNDECIDED failed, not tested skipped); eval_summary's Partitions tab counts
    # materializations only: every partition evaluated is materialized, none failed (a
    # verdict is no failed run; the partition's verdict is in its checks and verdicts table)
    statuses = {c["name"]: c["partitionStatuses"]
                for c in nodes["eval_summary"]["assetChecksOrError"]["checks"]}  # fmt: skip
    for (asset, name), done in executions.items():
        if asset != "eval_summary":
            continue
        latest: dict[str, str] = {}
        for execution in done:  # (the newest first)
            evaluation = execution["evaluation"]
            latest.setdefault(execution["partition"], "skipped" if evaluation is None
                              else "succeeded" if evaluation["success"] else "failed")
        shown = statuses[name]
        for status in ("succeeded", "failed", "skipped"):
            expected = sorted(p for p, s in latest.items() if s == status)
            assert sorted(shown[f"{status}Partitions"]) == expected, (name, status, shown)
        assert shown["executionFailedPartitions"] == []
    partitions = nodes["eval_summary"]["assetPartitionStatuses"]
    assert sorted(partitions["materializedPartitions"]) == sorted(partition_of.values())
    assert partitions["failedPartitions"] == []
