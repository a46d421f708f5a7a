"""Errors agenttrail raises to its callers.

Every error carries a ``message`` (what went wrong, and where: ``file:line`` when there is one) and a
``hint`` (what to do about it). The CLI prints both, once, and exits 2 for input errors.
"""

from __future__ import annotations


class AgenttrailError(Exception):
    """Base of every error agenttrail raises on purpose."""

    exit_code = 2

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class BundleError(AgenttrailError):
    """The path given is not a readable bundle."""


class BundleFormatError(BundleError):
    """A bundle file is present but malformed (schema, JSON, CSV)."""


class UnsafeArchiveError(BundleError):
    """An archive entry would write outside the target, or the archive is a decompression bomb."""


class StoreError(AgenttrailError):
    """Loading bundles into DuckDB or querying them failed."""


class DetectorError(AgenttrailError):
    """A detector is misconfigured (unknown code, bad threshold)."""


class GrafanaError(AgenttrailError):
    """Provisioning Grafana failed (unreachable, bad credentials, version)."""
