"""Secret scrubbing shared by the telemetry side and the bundle writer (stdlib only).

Each pattern matches the secret itself (group ``s``) so the surrounding text stays readable:
``Authorization: Bearer [REDACTED:bearer_token]``.
"""

from __future__ import annotations

import re
from typing import Final

_SECRET_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("private_key", re.compile(
        r"(?P<s>-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----)")),
    ("anthropic_key", re.compile(r"(?P<s>sk-ant-[A-Za-z0-9_\-]{20,})")),
    ("openai_key", re.compile(r"(?P<s>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,})")),
    ("google_key", re.compile(r"(?P<s>AIza[0-9A-Za-z_\-]{35})")),
    ("github_token", re.compile(r"(?P<s>(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,})")),
    ("slack_token", re.compile(r"(?P<s>xox[abposr]-[A-Za-z0-9\-]{10,})")),
    ("aws_access_key", re.compile(r"(?P<s>(?:AKIA|ASIA)[0-9A-Z]{16})")),
    ("aws_secret_key", re.compile(
        r"(?i)aws_secret_access_key\s*[=:]\s*['\"]?(?P<s>[A-Za-z0-9/+=]{40})")),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9\-._~+/]{16,}=*)")),
    ("url_password", re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:(?P<s>[^@\s/]+)@")),
    ("jwt", re.compile(r"(?P<s>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})")),
)  # fmt: skip

REDACTED: Final = "[REDACTED]"


# A cheap substring that every match of the pattern contains: most text has none of them, and a
# substring test is ~50x cheaper than a regex scan.
_TRIGGERS: Final = {
    "private_key": "PRIVATE KEY", "anthropic_key": "sk-ant-", "openai_key": "sk-",
    "google_key": "AIza", "github_token": "_", "slack_token": "xox", "aws_access_key": "A",
    "aws_secret_key": "", "bearer_token": "", "url_password": "://", "jwt": "eyJ",
}


def scrub(text: str) -> tuple[str, int]:
    """Replace every secret in ``text`` with ``[REDACTED:kind]``; return the text and the count."""
    count = 0
    lowered: str | None = None
    for kind, pattern in _SECRET_PATTERNS:
        trigger = _TRIGGERS[kind]
        if trigger and trigger not in text:
            continue
        if kind in ("bearer_token", "aws_secret_key"):
            lowered = lowered if lowered is not None else text.lower()
            if ("bearer" if kind == "bearer_token" else "aws_secret_access_key") not in lowered:
                continue

        def _sub(m: re.Match[str], kind: str = kind) -> str:
            nonlocal count
            count += 1
            start, end = m.span("s")
            whole = m.group(0)
            base = m.start(0)
            return whole[: start - base] + f"[REDACTED:{kind}]" + whole[end - base :]

        new = pattern.sub(_sub, text)
        if new is not text:
            text = new
            lowered = None
    return text, count
