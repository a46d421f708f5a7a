"""agenttrail.grafana.provision against FakeGrafanaAPI, a local stand-in for Grafana's HTTP API
(Grafana cannot be installed here; see fake_grafana.py for what the stand-in does and does not prove)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from agenttrail.errors import AgenttrailError, GrafanaError
from agenttrail.grafana.cli import grafana
from agenttrail.grafana.dashboards import DASHBOARD_FILES
from agenttrail.grafana.datasources import datasources
from agenttrail.grafana.provision import (
    GrafanaAuthError,
    GrafanaUnreachableError,
    GrafanaVersionError,
    provision,
)
from tests.stack.fake_grafana import FakeGrafanaAPI
from tests.stack.stackkit import REPO, free_port

pytestmark = pytest.mark.stack

TOKEN = "glsa_s3cr3t-token-value_0123456789"
ALL_CREATED = [
    ("folder", "agenttrail", "create"),
    ("datasource", "prometheus", "create"),
    ("datasource", "tempo", "create"),
    ("datasource", "loki", "create"),
    ("dashboard", "agenttrail-agent-overview", "create"),
    ("dashboard", "agenttrail-run-drilldown", "create"),
]


@pytest.fixture
def fake() -> Iterator[FakeGrafanaAPI]:
    with FakeGrafanaAPI(token=TOKEN) as f:
        yield f


def _summary(result: object) -> list[tuple[str, str, str]]:
    return [(a.kind, a.uid, a.action) for a in result.actions]  # type: ignore[attr-defined]


def test_first_run_creates_everything(fake: FakeGrafanaAPI) -> None:
    result = provision(fake.url, token=TOKEN)
    assert result.grafana_version == "13.0.1"
    assert _summary(result) == ALL_CREATED
    assert fake.folders["agenttrail"]["title"] == "agenttrail"
    for ds in datasources():
        stored = fake.datasources[ds["uid"]]
        assert {k: stored[k] for k in ds} == ds
    for uid, fname in DASHBOARD_FILES.items():
        committed = json.loads((REPO / "dashboards" / fname).read_text())
        stored = fake.dashboards[uid]
        assert stored["meta"]["folderUid"] == "agenttrail"
        volatile = ("id", "version")  # Grafana's to set
        assert {k: v for k, v in stored["dashboard"].items() if k not in volatile} == {
            k: v for k, v in committed.items() if k not in volatile
        }
    assert all(
        h == f"Bearer {TOKEN}"
        for m, h in zip(fake.requests, fake.auth_headers, strict=True)
        if m[1] != "/api/health"
    )


def test_second_run_changes_nothing(fake: FakeGrafanaAPI) -> None:
    provision(fake.url, token=TOKEN)
    before = len(fake.requests)
    result = provision(fake.url, token=TOKEN)
    assert not result.changed
    assert {a.action for a in result.actions} == {"unchanged"}
    assert [r for r in fake.requests[before:] if r[0] != "GET"] == []
    assert fake.dashboards["agenttrail-agent-overview"]["dashboard"]["version"] == 1


def test_dry_run_returns_the_plan_and_writes_nothing(fake: FakeGrafanaAPI) -> None:
    result = provision(fake.url, token=TOKEN, dry_run=True)
    assert result.dry_run
    assert _summary(result) == ALL_CREATED
    assert fake.writes() == []
    assert fake.folders == fake.datasources == fake.dashboards == {}


def test_drift_updates_only_what_differs(fake: FakeGrafanaAPI) -> None:
    provision(fake.url, token=TOKEN)
    fake.datasources["loki"]["url"] = "http://old-loki:3100"
    fake.dashboards["agenttrail-run-drilldown"]["dashboard"]["title"] = "edited by hand"
    result = provision(fake.url, token=TOKEN)
    changed = [(a.kind, a.uid, a.action, a.changed) for a in result.actions if a.action != "unchanged"]
    assert changed == [
        ("datasource", "loki", "update", ("url",)),
        ("dashboard", "agenttrail-run-drilldown", "update", ("title",)),
    ]
    assert fake.datasources["loki"]["url"] == "http://loki:3100"
    assert fake.dashboards["agenttrail-run-drilldown"]["dashboard"]["version"] == 2
    assert not provision(fake.url, token=TOKEN).changed


def test_custom_folder_and_datasource_urls(fake: FakeGrafanaAPI) -> None:
    result = provision(
        fake.url, token=TOKEN, folder="AI agents", datasource_urls={"prometheus": "http://prom:9090"}
    )
    assert result.actions[0].uid == "ai-agents"
    assert fake.dashboards["agenttrail-agent-overview"]["meta"]["folderUid"] == "ai-agents"
    assert fake.datasources["prometheus"]["url"] == "http://prom:9090"


def test_basic_auth() -> None:
    with FakeGrafanaAPI(basic=("admin", "pa55word")) as f:
        assert provision(f.url, user="admin", password="pa55word").changed
        with pytest.raises(GrafanaAuthError):
            provision(f.url, user="admin", password="wrong")


def test_bad_token_is_an_auth_error_that_never_shows_the_token(
    fake: FakeGrafanaAPI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bad = "glsa_wrong-token-do-not-print"
    with pytest.raises(GrafanaAuthError) as e:
        provision(fake.url, token=bad)
    assert isinstance(e.value, AgenttrailError)
    assert "401" in e.value.message and e.value.hint
    shown = f"{e.value!s} {e.value!r} {e.value.hint} {caplog.text}"
    assert bad not in shown
    assert fake.writes() == []


def test_unreachable_grafana() -> None:
    with pytest.raises(GrafanaUnreachableError) as e:
        provision(f"http://127.0.0.1:{free_port()}", token=TOKEN, timeout=3)
    assert "cannot reach Grafana" in e.value.message
    assert TOKEN not in str(e.value)


def test_old_grafana_is_a_version_error() -> None:
    with FakeGrafanaAPI(version="10.4.3", token=TOKEN) as f:
        with pytest.raises(GrafanaVersionError) as e:
            provision(f.url, token=TOKEN)
        assert "10.4.3" in e.value.message
        assert f.writes() == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"token": TOKEN, "user": "u", "password": "p"}, "not both"),
        ({"user": "u"}, "go together"),
    ],
)
def test_bad_credential_arguments(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(GrafanaError, match=message):
        provision("http://127.0.0.1:1", **kwargs)  # type: ignore[arg-type]


def test_credentials_in_url_are_refused_without_echoing_them() -> None:
    with pytest.raises(GrafanaError) as e:
        provision("http://admin:hunter2@127.0.0.1:1")
    assert "hunter2" not in str(e.value)


def test_cli_dry_run_and_json(fake: FakeGrafanaAPI) -> None:
    runner = CliRunner()
    r = runner.invoke(grafana, ["provision", "--url", fake.url, "--dry-run"], env={"GRAFANA_TOKEN": TOKEN})
    assert r.exit_code == 0, r.output
    assert "would change 6 object(s)" in r.output
    assert TOKEN not in r.output
    r = runner.invoke(grafana, ["provision", "--url", fake.url, "--token", TOKEN, "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["changed"] is True
    r = runner.invoke(grafana, ["provision", "--url", fake.url, "--token", TOKEN])
    assert r.exit_code == 0 and "nothing to change" in r.output


def test_cli_error_exit_code_and_no_token(fake: FakeGrafanaAPI) -> None:
    r = CliRunner().invoke(grafana, ["provision", "--url", fake.url, "--token", "glsa_nope_secret"])
    assert r.exit_code == 2
    assert "refused the credentials" in r.output
    assert "glsa_nope_secret" not in r.output
