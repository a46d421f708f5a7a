"""The bundle's block scrubber finds exactly what the full secret patterns find."""

from __future__ import annotations

import io

import pytest

from agenttrail._secrets import _SECRET_PATTERNS, scrub
from agenttrail.bundle._scrub import TRIGGERS, iter_blocks, scrub_block

SAMPLES = {
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "anthropic_key": "sk-ant-api03-" + "a" * 30,
    "openai_key": "sk-proj-" + "B" * 30,
    "google_key": "AIza" + "C" * 35,
    "github_token": "ghp_" + "d" * 36,
    "slack_token": "xoxb-1234567890-abcdef",
    "aws_access_key": "AKIA" + "E" * 16,
    "aws_secret_key": "AWS_SECRET_ACCESS_KEY=" + "f" * 40,
    "bearer_token": "Authorization: BeArEr abcdefghijklmnopqrstuvwxyz",
    "url_password": "postgres://admin:hunter2@db.internal:5432/app",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV",
}


def test_every_pattern_has_a_trigger_and_a_sample() -> None:
    kinds = [k for k, _ in _SECRET_PATTERNS]
    assert sorted(TRIGGERS) == sorted(kinds)
    assert sorted(SAMPLES) == sorted(kinds)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_block_scrub_equals_full_scrub(kind: str) -> None:
    lines = [f'{{"seq":{i},"type":"tool.finished","data":{{"out":"plain text {i}"}}}}' for i in range(50)]
    lines[17] = f'{{"seq":17,"data":{{"out":{SAMPLES[kind]!r}}}}}'
    block = "\n".join(lines) + "\n"
    fast, n = scrub_block(block)
    assert (fast, n) == scrub(block)
    assert n >= 1
    assert f"[REDACTED:{kind}]" in fast.splitlines()[17]
    assert fast.splitlines()[16] == lines[16]


def test_clean_block_is_returned_unchanged() -> None:
    block = "".join(f'{{"seq":{i},"url":"https://example.org/x"}}\n' for i in range(1000))
    out, n = scrub_block(block)
    assert n == 0
    assert out is block


def test_iter_blocks_keeps_whole_lines_and_a_torn_tail() -> None:
    text = "".join(f"line {i}\n" for i in range(100)) + "torn"
    blocks = list(iter_blocks(io.StringIO(text).read, size=64))
    assert "".join(blocks) == text
    assert all(b.endswith("\n") for b in blocks[:-1])
    assert blocks[-1] == "torn"
