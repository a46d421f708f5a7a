"""Provision Grafana through its HTTP API: health check, folder, datasources, dashboards.

Idempotent: each object is read first and written only when it differs from what agenttrail would
write, so a second run changes nothing. ``dry_run=True`` reads but never writes and returns the plan.

API calls used (and nothing else; ``tests/stack/test_provision.py`` serves exactly these from its
``FakeGrafanaAPI`` stand-in):

    GET  /api/health                       reachability and version
    GET  /api/folders/{uid}                POST /api/folders         PUT /api/folders/{uid}
    GET  /api/datasources/uid/{uid}        POST /api/datasources     PUT /api/datasources/uid/{uid}
    GET  /api/dashboards/uid/{uid}         POST /api/dashboards/db

The credential (a service-account token, or user and password) only ever goes into the HTTP client's
auth object: no message, log line or result contains it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal, TypeVar
from urllib.parse import urlsplit

from agenttrail.errors import GrafanaError

from .dashboards import FOLDER_TITLE, FOLDER_UID, build_all
from .datasources import datasources

_log = logging.getLogger(__name__)

MIN_VERSION: Final = (11, 0)
# Fields of a datasource that agenttrail sets; only these are compared with what Grafana has.
_DATASOURCE_FIELDS: Final = ("name", "type", "access", "url", "isDefault", "jsonData")
# Fields Grafana adds to a stored dashboard; ignored when comparing.
_DASHBOARD_VOLATILE: Final = ("id", "version")

T = TypeVar("T")
ActionKind = Literal["create", "update", "unchanged"]


class GrafanaUnreachableError(GrafanaError):
    """Nothing answered at the Grafana URL (refused, DNS, TLS, timeout)."""


class GrafanaAuthError(GrafanaError):
    """Grafana refused the credentials (401) or the permission (403)."""


class GrafanaVersionError(GrafanaError):
    """The Grafana server is older than the dashboards need."""


class GrafanaApiError(GrafanaError):
    """Grafana answered a request with an unexpected error."""


@dataclass(frozen=True)
class Action:
    kind: Literal["folder", "datasource", "dashboard"]
    uid: str
    title: str
    action: ActionKind
    changed: tuple[str, ...] = ()


@dataclass
class ProvisionResult:
    url: str
    grafana_version: str
    dry_run: bool
    actions: list[Action] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(a.action != "unchanged" for a in self.actions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "grafana_version": self.grafana_version,
            "dry_run": self.dry_run,
            "changed": self.changed,
            "actions": [asdict(a) for a in self.actions],
        }


def folder_uid_for(title: str) -> str:
    """A stable folder uid from its title (``agenttrail`` for the default)."""
    if title == FOLDER_TITLE:
        return FOLDER_UID
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40]
    return slug or FOLDER_UID


def parse_version(text: str) -> tuple[int, int]:
    m = re.match(r"v?(\d+)\.(\d+)", text or "")
    if not m:
        raise GrafanaVersionError(
            f"Grafana reported an unreadable version {text!r}",
            hint="check that the URL points at Grafana itself, not a proxy page",
        )
    return int(m.group(1)), int(m.group(2))


def _safe_url(url: str) -> str:
    """The URL without any user:password part (never shown)."""
    p = urlsplit(url)
    host = p.hostname or ""
    if p.port:
        host = f"{host}:{p.port}"
    return f"{p.scheme}://{host}{p.path}".rstrip("/")


class Provisioner:
    """One Grafana, one credential. Use :func:`provision` unless you need the pieces."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        user: str | None = None,
        password: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        from grafana_client.api import GrafanaApi

        p = urlsplit(url)
        if p.scheme not in ("http", "https") or not p.hostname:
            raise GrafanaError(
                f"not an http(s) URL: {_safe_url(url)!r}", hint="pass --url like http://localhost:3000"
            )
        if token and (user or password):
            raise GrafanaError(
                "give either a token or a user and password, not both",
                hint="use --token for a service-account token, or --user/--password",
            )
        if (user is None) != (password is None):
            raise GrafanaError("--user and --password go together", hint="pass both, or use --token")
        if p.username or p.password:
            raise GrafanaError(
                "credentials in the URL are not accepted",
                hint="pass them with --token or --user/--password instead",
            )
        credential: str | tuple[str, str] | None = token or ((user, password) if user and password else None)
        self.url = _safe_url(url)
        self.api = GrafanaApi.from_url(self.url, credential=credential, timeout=timeout)

    # -- low level -------------------------------------------------------------------------------
    def _call(self, what: str, fn: Callable[[], T]) -> T:
        from grafana_client.client import (
            GrafanaClientError,
            GrafanaException,
            GrafanaServerError,
            GrafanaTimeoutError,
            GrafanaUnauthorizedError,
        )

        try:
            return fn()
        except GrafanaUnauthorizedError as e:
            raise GrafanaAuthError(
                f"Grafana at {self.url} refused the credentials while {what} (401)",
                hint="check the service-account token (or user and password)",
            ) from e
        except GrafanaClientError as e:
            if e.status_code == 403:
                raise GrafanaAuthError(
                    f"Grafana at {self.url} denied permission while {what} (403)",
                    hint="the service account needs the Editor role (Admin to create datasources)",
                ) from e
            raise GrafanaApiError(
                f"Grafana at {self.url} rejected a request while {what}: {_message(e)}",
                hint="see the message; rerun with --dry-run to see the plan",
            ) from e
        except GrafanaTimeoutError as e:
            raise GrafanaUnreachableError(
                f"Grafana at {self.url} did not answer in time while {what}",
                hint="check the URL and that Grafana is up",
            ) from e
        except GrafanaServerError as e:
            raise GrafanaApiError(
                f"Grafana at {self.url} failed while {what}: {_message(e)}", hint="look at Grafana's log"
            ) from e
        except GrafanaException as e:
            raise GrafanaUnreachableError(
                f"cannot reach Grafana at {self.url} while {what}",
                hint="check the URL and that Grafana is up "
                "(docker compose -f docker-compose.observability.yml ps)",
            ) from e
        except OSError as e:
            raise GrafanaUnreachableError(
                f"cannot reach Grafana at {self.url} while {what}: {type(e).__name__}",
                hint="check the URL and that Grafana is up",
            ) from e

    def _get_or_none(self, what: str, fn: Callable[[], T]) -> T | None:
        from grafana_client.client import GrafanaClientError

        try:
            return self._call(what, fn)
        except GrafanaApiError as e:
            cause = e.__cause__
            if isinstance(cause, GrafanaClientError) and getattr(cause, "status_code", None) == 404:
                return None
            raise

    # -- steps -----------------------------------------------------------------------------------
    def check_health(self) -> str:
        """Return the Grafana version; raise when unreachable or too old."""
        health = self._call("checking health", lambda: self.api.client.GET("/health"))
        version = str(health.get("version", "")) if isinstance(health, Mapping) else ""
        if not version:  # version hidden from anonymous callers: ask with credentials
            info = self._call("reading build info", self.api.health.check)
            version = str((info or {}).get("version", ""))
        if parse_version(version) < MIN_VERSION:
            raise GrafanaVersionError(
                f"Grafana {version} at {self.url} is older than {MIN_VERSION[0]}.{MIN_VERSION[1]}",
                hint="the dashboards use TraceQL panels and tracesToLogsV2: upgrade Grafana "
                "(docker-compose.observability.yml pins grafana/grafana 13.0.1)",
            )
        return version

    def plan_folder(self, title: str, uid: str) -> Action:
        got = self._get_or_none("reading the folder", lambda: self.api.folder.get_folder(uid))
        if got is None:
            return Action("folder", uid, title, "create")
        if got.get("title") != title:
            return Action("folder", uid, title, "update", ("title",))
        return Action("folder", uid, title, "unchanged")

    def apply_folder(self, a: Action) -> None:
        if a.action == "create":
            self._call("creating the folder", lambda: self.api.folder.create_folder(a.title, uid=a.uid))
        elif a.action == "update":
            self._call(
                "renaming the folder",
                lambda: self.api.folder.update_folder(a.uid, title=a.title, overwrite=True),
            )

    def plan_datasource(self, ds: Mapping[str, Any]) -> Action:
        uid = str(ds["uid"])
        got = self._get_or_none(
            f"reading datasource {uid}", lambda: self.api.datasource.get_datasource_by_uid(uid)
        )
        if got is None:
            return Action("datasource", uid, str(ds["name"]), "create")
        changed = tuple(k for k in _DATASOURCE_FIELDS if got.get(k) != ds.get(k))
        return Action("datasource", uid, str(ds["name"]), "update" if changed else "unchanged", changed)

    def apply_datasource(self, a: Action, ds: Mapping[str, Any]) -> None:
        body = dict(ds)
        if a.action == "create":
            self._call(f"creating datasource {a.uid}", lambda: self.api.datasource.create_datasource(body))
        elif a.action == "update":
            self._call(
                f"updating datasource {a.uid}",
                lambda: self.api.datasource.update_datasource_by_uid(a.uid, body),
            )

    def plan_dashboard(self, dash: Mapping[str, Any], folder_uid: str) -> Action:
        uid = str(dash["uid"])
        got = self._get_or_none(f"reading dashboard {uid}", lambda: self.api.dashboard.get_dashboard(uid))
        if got is None:
            return Action("dashboard", uid, str(dash["title"]), "create")
        stored = {k: v for k, v in (got.get("dashboard") or {}).items() if k not in _DASHBOARD_VOLATILE}
        wanted = {k: v for k, v in dash.items() if k not in _DASHBOARD_VOLATILE}
        changed = sorted(k for k in set(stored) | set(wanted) if stored.get(k) != wanted.get(k))
        if (got.get("meta") or {}).get("folderUid") != folder_uid:
            changed.append("folder")
        return Action(
            "dashboard", uid, str(dash["title"]), "update" if changed else "unchanged", tuple(changed)
        )

    def apply_dashboard(self, a: Action, dash: Mapping[str, Any], folder_uid: str) -> None:
        if a.action == "unchanged":
            return
        body = {
            "dashboard": {**dash, "id": None},
            "folderUid": folder_uid,
            "overwrite": True,
            "message": "agenttrail grafana provision",
        }
        self._call(f"saving dashboard {a.uid}", lambda: self.api.dashboard.update_dashboard(body))


def _message(e: Exception) -> str:
    resp = getattr(e, "response", None)
    if isinstance(resp, Mapping) and "message" in resp:
        return str(resp["message"])
    return str(getattr(e, "message", "") or type(e).__name__)


def provision(
    url: str,
    *,
    token: str | None = None,
    user: str | None = None,
    password: str | None = None,
    folder: str = FOLDER_TITLE,
    datasource_urls: Mapping[str, str] | None = None,
    dry_run: bool = False,
    timeout: float = 10.0,
) -> ProvisionResult:
    """Provision the agenttrail folder, datasources and dashboards; return what was (or would be) done."""
    p = Provisioner(url, token=token, user=user, password=password, timeout=timeout)
    version = p.check_health()
    result = ProvisionResult(p.url, version, dry_run)
    fuid = folder_uid_for(folder)

    folder_action = p.plan_folder(folder, fuid)
    result.actions.append(folder_action)
    dss = datasources(dict(datasource_urls or {}))
    ds_actions = [(p.plan_datasource(ds), ds) for ds in dss]
    result.actions += [a for a, _ in ds_actions]
    dashes = list(build_all().values())
    dash_actions = [(p.plan_dashboard(d, fuid), d) for d in dashes]
    result.actions += [a for a, _ in dash_actions]
    if dry_run:
        return result

    p.apply_folder(folder_action)
    for a, ds in ds_actions:
        p.apply_datasource(a, ds)
    for a, d in dash_actions:
        p.apply_dashboard(a, d, fuid)
    _log.info(
        "agenttrail: provisioned Grafana at %s (%d changes)",
        p.url,
        sum(a.action != "unchanged" for a in result.actions),
    )
    return result
