"""The deployment descriptions: the Kubernetes manifests validate against the API's schemas
(`kubernetes-validate`, strict: an unknown field fails) for the oldest and newest supported
versions, and say what the README promises; the compose file's profiles hold together, and
`docker compose config` (or docker-compose) accepts it where one is installed. No cluster runs here."""

from __future__ import annotations

import os
import shutil
import subprocess

import kubernetes_validate
import pytest
import yaml

from app import ROOT
from app.settings import Settings
from app.worker.jobs import QUEUES

KUBE = ROOT / "deploy" / "kubernetes"
VERSIONS = ("1.29.0", "1.37.0")


def _docs() -> list[dict]:
    kustomization = yaml.safe_load((KUBE / "kustomization.yaml").read_text())
    return [doc for name in kustomization["resources"] for doc in yaml.safe_load_all((KUBE / name).read_text()) if doc]


def _by(kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in _docs() if d["kind"] == kind}


def _known_variable(name: str) -> bool:
    settings = {"DATABASE_URL"} | {f"VLCURATE_{n.upper()}" for n in Settings.model_fields}
    return name in settings or name.startswith("AWS_") or name == "TMPDIR"


def test_every_manifest_validates_strictly():
    kustomization = yaml.safe_load((KUBE / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(p.name for p in KUBE.glob("*.yaml") if p.name != "kustomization.yaml")
    docs = _docs()
    assert len(docs) >= 9
    for doc in docs:
        for version in VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)


def test_the_validator_refuses_a_broken_manifest():
    deployment = _by("Deployment")["vlcurate-app"]
    broken = yaml.safe_load(yaml.safe_dump(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {"httpGet": {"path": "/healthz"}}  # misspelt
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[-1], strict=True)


def test_the_app_is_ready_on_healthz_and_keeps_nothing():
    app = _by("Deployment")["vlcurate-app"]
    (container,) = app["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert {"name": "http", "containerPort": 8000} in container["ports"]
    assert app["spec"]["replicas"] >= 2
    # No volume outlives the pod: images and exports are in the bucket.
    assert all("emptyDir" in v for v in app["spec"]["template"]["spec"]["volumes"])
    assert _by("Service")["vlcurate-app"]["spec"]["selector"] == app["spec"]["selector"]["matchLabels"]


def test_one_worker_deployment_per_queue_and_gpus_for_suggestions():
    workers = {name: d for name, d in _by("Deployment").items() if name.startswith("vlcurate-worker-")}
    assert sorted(workers) == sorted(f"vlcurate-worker-{q}" for q in QUEUES)
    for queue in QUEUES:
        (container,) = workers[f"vlcurate-worker-{queue}"]["spec"]["template"]["spec"]["containers"]
        assert container["command"] == ["vlcurate", "worker", "--queues", queue]
        gpus = container["resources"].get("limits", {}).get("nvidia.com/gpu")
        assert (gpus == 1) if queue == "suggest" else gpus is None
    claims = [v["persistentVolumeClaim"]["claimName"] for d in workers.values() for v in d["spec"]["template"]["spec"]["volumes"]
              if "persistentVolumeClaim" in v]
    assert claims == ["vlcurate-models"] and "vlcurate-models" in _by("PersistentVolumeClaim")


def test_the_migration_job_secrets_and_s3_config():
    (job,) = _by("Job").values()
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["vlcurate", "db", "upgrade"]
    config, secret = _by("ConfigMap")["vlcurate"], _by("Secret")["vlcurate"]
    assert config["data"]["VLCURATE_STORAGE_BACKEND"] == "s3" and config["data"]["VLCURATE_S3_BUCKET"]
    assert {"DATABASE_URL", "VLCURATE_SECRET_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= set(secret["stringData"])
    for name in [*config["data"], *secret["stringData"]]:
        assert _known_variable(name), f"{name} is no setting"
    # Every value the settings class reads from the config parses.
    env = {k: v for k, v in {**config["data"], **secret["stringData"]}.items() if k.startswith("VLCURATE_")}
    parsed = Settings(**{k.removeprefix("VLCURATE_").lower(): v for k, v in env.items()})
    assert parsed.storage_backend == "s3" and parsed.s3_presign_seconds > 0
    for d in [*_by("Deployment").values(), job]:
        for c in d["spec"]["template"]["spec"]["containers"]:
            refs = {next(iter(r)): r[next(iter(r))]["name"] for r in c["envFrom"]}
            assert refs == {"configMapRef": "vlcurate", "secretRef": "vlcurate"}
            assert all(_known_variable(e["name"]) for e in c.get("env", []))


# -- compose ------------------------------------------------------------------------------------------


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_the_compose_profiles_hold_together():
    services = _compose()["services"]
    profiles = {name: tuple(s.get("profiles", ())) for name, s in services.items()}
    assert profiles["postgres"] == ()
    assert {n for n, p in profiles.items() if p == ("one",)} == {"app", "worker"}
    assert {n for n, p in profiles.items() if p == ("many",)} == {"minio", "bucket", "migrate", "replica", "proxy", "jobs"}
    for name, service in services.items():
        for needed in service.get("depends_on", {}):
            assert needed in services and set(profiles[needed]) <= set(profiles[name]), f"{name} needs {needed}"
    for name in ("replica", "jobs"):
        service = services[name]
        assert "replicas" in service["deploy"] and "volumes" not in service, f"{name} keeps no local state"
        assert service["environment"]["VLCURATE_STORAGE_BACKEND"] == "s3"
        assert all(_known_variable(k) for k in service["environment"])
    assert services["migrate"]["command"] == ["vlcurate", "db", "upgrade"]
    assert services["replica"]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    assert "replica:8000" in services["proxy"]["command"]


def test_compose_config_accepts_the_file():
    env = {**os.environ, "VLCURATE_SECRET_KEY": "x" * 40}
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        command = ["docker", "compose"]
    elif shutil.which("docker-compose"):
        command = ["docker-compose"]
    else:
        pytest.skip("neither `docker compose` nor docker-compose is installed (the structural test above still runs)")
    for profile in ("one", "many"):
        run = subprocess.run([*command, "-f", str(ROOT / "docker-compose.yml"), "--profile", profile, "config", "--quiet"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
