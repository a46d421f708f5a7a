"""Static checks of docker-compose.observability.yml and the stack/ configs (docker cannot run here,
so nothing in this file starts a container): pinned images, healthchecks, mounts of files that
exist, the flags and settings the reference stack got wrong, and agreement between the compose
service addresses, the collector defaults and the Grafana datasources."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agenttrail.grafana.dashboards import provider_yaml
from agenttrail.grafana.datasources import DEFAULT_URLS
from tests.stack.stackkit import REPO, require_module

pytestmark = pytest.mark.stack
yaml = require_module("yaml", "pip install pyyaml==6.0.4 (dev extra)")

COMPOSE: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.observability.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
IMAGES = {
    "otel-collector": "otel/opentelemetry-collector-contrib:0.159.0",
    "tempo": "grafana/tempo:3.0.3",
    "loki": "grafana/loki:3.7.6",
    "prometheus": "prom/prometheus:v3.14.0",
    "grafana": "grafana/grafana:13.0.1",
}


def _load(rel: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((REPO / rel).read_text())
    return data


def test_images_are_pinned_to_the_chosen_versions() -> None:
    assert {s: SERVICES[s]["image"] for s in IMAGES} == IMAGES
    for name, svc in SERVICES.items():
        assert re.fullmatch(r"[\w./-]+:v?\d+\.\d+\.\d+", svc["image"]), f"{name}: image not pinned"


def test_collector_image_matches_the_builder_release() -> None:
    manifest = _load("collector/builder-config.yaml")
    versions = {
        m["gomod"].split()[1] for kind in ("receivers", "processors", "exporters") for m in manifest[kind]
    }
    assert versions == {"v0.159.0"}
    assert SERVICES["otel-collector"]["image"].endswith(":0.159.0")


def test_every_long_running_service_has_a_healthcheck_except_the_scratch_collector() -> None:
    for name, svc in SERVICES.items():
        if name in ("otel-collector", "tempo-init"):
            continue
        assert svc["healthcheck"]["test"][0] == "CMD", name


def test_mounted_files_exist() -> None:
    for name, svc in SERVICES.items():
        for vol in svc.get("volumes", []):
            src = vol.split(":")[0]
            if src.startswith("./"):
                assert (REPO / src).exists(), f"{name} mounts missing {src}"


def test_prometheus_accepts_remote_write_and_otlp() -> None:
    cmd = SERVICES["prometheus"]["command"]
    assert "--web.enable-remote-write-receiver" in cmd
    assert "--web.enable-otlp-receiver" in cmd
    scrape = _load("stack/prometheus.yml")["scrape_configs"]
    assert scrape[0]["static_configs"][0]["targets"] == ["otel-collector:8888"]


def test_collector_defaults_point_at_the_compose_services() -> None:
    text = (REPO / "collector" / "otelcol.yaml").read_text()
    defaults = dict(re.findall(r"\$\{env:([A-Z_]+):-([^}]*)\}", text))
    assert defaults["TEMPO_ENDPOINT"] == "tempo:4317"
    assert defaults["LOKI_ENDPOINT"] == "http://loki:3100/otlp"
    assert defaults["PROMETHEUS_REMOTE_WRITE_ENDPOINT"] == "http://prometheus:9090/api/v1/write"
    assert (defaults["COLLECTOR_METRICS_HOST"], defaults["COLLECTOR_METRICS_PORT"]) == ("0.0.0.0", "8888")
    compose_env = SERVICES["otel-collector"]["environment"]
    assert set(compose_env) <= set(defaults)
    tempo = _load("stack/tempo.yaml")
    assert tempo["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"] == "0.0.0.0:4317"


def test_collector_config_structure() -> None:
    cfg = _load("collector/otelcol.yaml")
    assert set(cfg["exporters"]) == {"otlp_grpc/tempo", "otlp_http/loki", "prometheus_remote_write"}
    assert cfg["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].endswith(":-0.0.0.0:4317}")
    for name, p in cfg["service"]["pipelines"].items():
        assert p["processors"][0] == "memory_limiter", name
        assert p["processors"][-1] == "batch", name
    reader = cfg["service"]["telemetry"]["metrics"]["readers"][0]["pull"]["exporter"]["prometheus"]
    assert set(reader) == {"host", "port"}


def test_datasource_urls_are_compose_services() -> None:
    ports = {"prometheus": "9090:9090", "tempo": "3200:3200", "loki": "3100:3100"}
    for uid, url in DEFAULT_URLS.items():
        assert url == f"http://{uid}:{ports[uid].split(':')[1]}"
        assert ports[uid] in SERVICES[uid]["ports"]


def test_grafana_mounts_match_the_dashboard_provider() -> None:
    provider = yaml.safe_load(provider_yaml())["providers"][0]
    vols = SERVICES["grafana"]["volumes"]
    assert f"./dashboards:{provider['options']['path']}:ro" in vols
    assert "./dashboards/provisioning/datasources:/etc/grafana/provisioning/datasources:ro" in vols


def test_tempo_is_a_3x_config_with_metrics_generator() -> None:
    tempo = _load("stack/tempo.yaml")
    assert "ingester" not in tempo
    rw = tempo["metrics_generator"]["storage"]["remote_write"][0]
    assert rw["url"] == "http://prometheus:9090/api/v1/write"
    assert {"span-metrics", "service-graphs"} <= set(
        tempo["overrides"]["defaults"]["metrics_generator"]["processors"]
    )


def test_loki_retention_actually_runs_and_structured_metadata_is_on() -> None:
    loki = _load("stack/loki.yaml")
    assert loki["compactor"]["retention_enabled"] is True
    assert loki["compactor"]["delete_request_store"] == "filesystem"
    assert loki["limits_config"]["allow_structured_metadata"] is True
    assert loki["limits_config"]["retention_period"]
    assert loki["schema_config"]["configs"][0]["schema"] == "v13"


def test_builder_manifest_has_exactly_the_components_the_config_uses(collector_bin: Any) -> None:
    """Asked of the built binary itself (`components`), so the names are the ones v0.159.0 registers."""
    import subprocess

    out = subprocess.run(
        [str(collector_bin), "components"], capture_output=True, text=True, check=True, timeout=60
    )
    built = yaml.safe_load(out.stdout)
    cfg = _load("collector/otelcol.yaml")
    for kind in ("receivers", "processors", "exporters"):
        used = {name.split("/")[0] for name in cfg[kind]}
        if kind == "exporters":
            used.add("file")  # tests/stack/sink-otelcol.yaml
        assert {c["name"] for c in built[kind]} == used, kind
    assert {c["scheme"] for c in built["providers"]} >= {"env", "file"}
