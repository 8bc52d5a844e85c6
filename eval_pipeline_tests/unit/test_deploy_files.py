"""The deployment files agree with each other and with pyproject.toml: the image is pinned,
non-root and health-checked, the lock covers every dependency, and the Helm values carry
the same queue limits as deploy/dagster.yaml (no network: nothing is built or pulled)."""

from __future__ import annotations

import re
import tomllib
from fnmatch import fnmatch

import yaml
from packaging.requirements import Requirement

from eval_pipeline_tests.helpers import ROOT

DOCKERFILE = (ROOT / "Dockerfile").read_text()
LOCK_LINE = re.compile(r"^([A-Za-z0-9._-]+)==(\S+) \\\n    --hash=sha256:[0-9a-f]{64}$", re.M)


def instructions(keyword: str) -> list[str]:
    joined = DOCKERFILE.replace("\\\n", " ")
    return [line.split(None, 1)[1] for line in joined.splitlines()
            if line.startswith(keyword + " ")]  # fmt: skip


def locked() -> dict[str, str]:
    text = (ROOT / "deploy" / "requirements.lock").read_text()
    pins = LOCK_LINE.findall(text)
    body = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert len(body) == 2 * len(pins), "every lock entry is name==version plus one hash"
    names = [name.lower().replace("_", "-") for name, _ in pins]
    assert len(names) == len(set(names)), "a package is locked twice"
    return dict(zip(names, (version for _, version in pins), strict=True))


def test_image_is_pinned_non_root_and_health_checked():
    (base,) = instructions("FROM")
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base), base
    (user,) = instructions("USER")
    assert user.split(":")[0] not in ("0", "root"), user
    assert any("--require-hashes" in r and "deploy/requirements.lock" in r
               for r in instructions("RUN"))  # fmt: skip
    assert any("--no-deps ." in r for r in instructions("RUN"))  # the project: nothing resolved
    (check,) = instructions("HEALTHCHECK")
    assert "grpc-health-check" in check
    (cmd,) = instructions("CMD")
    assert '"grpc"' in cmd and "eval_pipeline.definitions" in cmd


def test_image_copies_only_what_exists_and_is_not_ignored():
    ignored = [ln for ln in (ROOT / ".dockerignore").read_text().splitlines()
               if ln and not ln.startswith("#")]  # fmt: skip
    for copy in instructions("COPY"):
        *sources, _ = copy.split()
        for source in sources:
            assert (ROOT / source).exists(), source
            assert not any(fnmatch(source, pattern) for pattern in ignored), source
    assert ".venv" in ignored and ".git" in ignored and "**/.eval_home" in ignored
    assert "examples/scripts" in ignored  # the data generators are not needed to serve


def test_lock_pins_every_dependency_within_pyproject_ranges():
    pins = locked()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    environment = {"sys_platform": "linux", "python_version": "3.11"}
    for spec in project["dependencies"]:
        requirement = Requirement(spec)
        if requirement.marker and not requirement.marker.evaluate(environment):
            continue
        name = requirement.name.lower().replace("_", "-")
        assert name in pins, f"{name} missing from deploy/requirements.lock: run lock_deploy.py"
        assert requirement.specifier.contains(pins[name], prereleases=True), (name, pins[name])
    assert "psycopg2-binary" in pins  # the driver deploy/dagster.yaml names for Dagster storage
    assert "dagster-k8s" in pins  # EVAL_EXECUTOR=k8s: a pod per shard (docs/kubernetes.md)
    assert "dagster-aws" in pins  # EVAL_S3_BUCKET: steps' data shared (docs/deployment.md)
    assert not set(pins) & {"pytest", "ruff", "hypothesis"}  # no test tools in the image


def test_helm_values_match_the_instance_config():
    instance = yaml.safe_load((ROOT / "deploy" / "dagster.yaml").read_text())
    values = yaml.safe_load((ROOT / "deploy" / "helm" / "values.yaml").read_text())
    assert values["runLauncher"]["type"] == "K8sRunLauncher"  # one pod per run
    coordinator = values["dagsterDaemon"]["runCoordinator"]
    assert coordinator["enabled"] and coordinator["type"] == "QueuedRunCoordinator"
    helm_limits = coordinator["config"]["queuedRunCoordinator"]["tagConcurrencyLimits"]
    assert helm_limits == instance["concurrency"]["runs"]["tag_concurrency_limits"]
    pools = instance["concurrency"]["pools"]
    assert values["concurrency"]["pools"]["defaultLimit"] == pools["default_limit"]
    scheme = instance["storage"]["postgres"]["postgres_db"]["scheme"]
    assert values["postgresql"]["postgresqlScheme"] == scheme
    assert instance["run_coordinator"]["class"] == "QueuedRunCoordinator"
    retries = values["dagsterDaemon"]["runRetries"]
    assert retries == {"enabled": True, "maxRetries": instance["run_retries"]["max_retries"]}
    assert instance["run_retries"]["enabled"]


def test_deployment_files_hold_no_secrets():
    secret = re.compile(r"(sk-[A-Za-z0-9]{8,}|pk-lf-|sk-lf-|password:\s*\w)", re.I)
    for path in ("Dockerfile", "deploy/dagster.yaml", "deploy/helm/values.yaml"):
        text = (ROOT / path).read_text()
        assert not secret.search(text), (path, secret.search(text))


def test_the_package_ships_without_the_tests():
    """`pip install eval-pipeline` installs eval_pipeline only: the tests and their zoo of
    agents were installed into site-packages beside it (issue 46)."""
    from setuptools import find_packages

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found = find_packages(str(ROOT), **config["tool"]["setuptools"]["packages"]["find"])
    assert "eval_pipeline" in found and "eval_pipeline.core.store" in found
    assert not [name for name in found if name.startswith("eval_pipeline_tests")], found
