"""FakeGrafanaAPI: a STAND-IN for Grafana's HTTP API, for testing agenttrail.grafana.provision.

Grafana cannot be installed on the test machine, so this local HTTP server (127.0.0.1, random port)
implements just the calls the provisioner makes, with Grafana's status codes and body shapes as
documented for the HTTP API, and checks what it is sent (auth, required fields, folder existence,
uid conflicts). It is not Grafana: passing against it proves the provisioner's logic (plan,
idempotency, errors, secrecy), not compatibility with a real server.

    GET  /api/health
    GET  /api/folders/{uid}         POST /api/folders         PUT /api/folders/{uid}
    GET  /api/datasources/uid/{uid} POST /api/datasources     PUT /api/datasources/uid/{uid}
    GET  /api/dashboards/uid/{uid}  POST /api/dashboards/db
"""

from __future__ import annotations

import base64
import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeGrafanaAPI:
    def __init__(
        self, *, version: str = "13.0.1", token: str | None = None, basic: tuple[str, str] | None = None
    ) -> None:
        self.version = version
        self.token = token
        self.basic = basic
        self.folders: dict[str, dict[str, Any]] = {}
        self.datasources: dict[str, dict[str, Any]] = {}
        self.dashboards: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self.auth_headers: list[str] = []
        self._next_id = 1
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeGrafanaAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def writes(self) -> list[tuple[str, str]]:
        return [r for r in self.requests if r[0] != "GET"]

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    # -- request handling ----------------------------------------------------------------------
    def _authorized(self, header: str | None) -> bool:
        if header is None:
            return False
        if self.token is not None and header == f"Bearer {self.token}":
            return True
        if self.basic is not None:
            expect = base64.b64encode(f"{self.basic[0]}:{self.basic[1]}".encode()).decode()
            return header == f"Basic {expect}"
        return False

    def handle(self, method: str, path: str, body: Any, auth: str | None) -> tuple[int, Any]:
        with self._lock:
            self.requests.append((method, path))
            self.auth_headers.append(auth or "")
            if (method, path) == ("GET", "/api/health"):  # anonymous in Grafana
                return 200, {"commit": "fake", "database": "ok", "version": self.version}
            if not self._authorized(auth):
                return 401, {"message": "Unauthorized"}
            parts = path.strip("/").split("/")
            try:
                return self._route(method, parts, body)
            except KeyError as e:
                return 400, {"message": f"bad request: missing {e}"}

    def _route(self, method: str, p: list[str], body: Any) -> tuple[int, Any]:
        # folders
        if p[:2] == ["api", "folders"]:
            if method == "POST" and len(p) == 2:
                uid = body.get("uid") or f"f{self._id()}"
                if uid in self.folders:
                    return 409, {"message": "a folder with the same uid already exists"}
                self.folders[uid] = {"id": self._id(), "uid": uid, "title": body["title"], "version": 1}
                return 200, self.folders[uid]
            uid = p[2]
            if uid not in self.folders:
                return 404, {"message": "folder not found"}
            if method == "GET":
                return 200, self.folders[uid]
            if method == "PUT":
                f = self.folders[uid]
                if not body.get("overwrite") and body.get("version") != f["version"]:
                    return 412, {"message": "the folder has been changed by someone else"}
                f.update(title=body["title"], version=f["version"] + 1)
                return 200, f
        # datasources
        if p[:2] == ["api", "datasources"]:
            if method == "POST" and len(p) == 2:
                for k in ("name", "type", "access", "url"):
                    body[k]
                uid = body.get("uid") or f"d{self._id()}"
                if uid in self.datasources or any(
                    d["name"] == body["name"] for d in self.datasources.values()
                ):
                    return 409, {"message": "data source with the same name already exists"}
                ds = {
                    "id": self._id(),
                    "orgId": 1,
                    "readOnly": False,
                    "basicAuth": False,
                    **copy.deepcopy(body),
                }
                self.datasources[uid] = ds
                return 200, {
                    "datasource": ds,
                    "id": ds["id"],
                    "message": "Datasource added",
                    "name": ds["name"],
                }
            if p[2] == "uid" and len(p) == 4:
                uid = p[3]
                if uid not in self.datasources:
                    return 404, {"message": "Data source not found"}
                if method == "GET":
                    return 200, self.datasources[uid]
                if method == "PUT":
                    ds = self.datasources[uid]
                    ds.update(copy.deepcopy(body))
                    return 200, {"datasource": ds, "id": ds["id"], "message": "Datasource updated"}
        # dashboards
        if p[:3] == ["api", "dashboards", "uid"] and method == "GET":
            uid = p[3]
            if uid not in self.dashboards:
                return 404, {"message": "Dashboard not found"}
            return 200, copy.deepcopy(self.dashboards[uid])
        if p == ["api", "dashboards", "db"] and method == "POST":
            dash = copy.deepcopy(body["dashboard"])
            uid, folder = dash["uid"], body.get("folderUid", "")
            dash["title"]
            if folder and folder not in self.folders:
                return 400, {"message": "folder not found"}
            old = self.dashboards.get(uid)
            if old is not None and not body.get("overwrite"):
                return 412, {"status": "version-mismatch", "message": "dashboard changed"}
            version = old["dashboard"]["version"] + 1 if old else 1
            dash.update(id=old["dashboard"]["id"] if old else self._id(), version=version)
            self.dashboards[uid] = {"dashboard": dash, "meta": {"folderUid": folder, "version": version}}
            return 200, {
                "id": dash["id"],
                "uid": uid,
                "url": f"/d/{uid}",
                "status": "success",
                "version": version,
            }
        return 404, {"message": "Not found"}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                body = json.loads(raw) if raw else None
                status, payload = fake.handle(
                    self.command, self.path.split("?")[0], body, self.headers.get("Authorization")
                )
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
