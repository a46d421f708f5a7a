"""Secret scrubbing at bundle scale: whole files in large blocks, full patterns only where needed.

``agenttrail._secrets.scrub`` runs a dozen regular expressions; over every line of a 100k-span trace
that costs seconds. Here each block of text is first searched for literal strings that every secret
of some kind contains (``sk-``, ``AKIA``, ``eyJ``, ``bearer`` ...). ``str.find`` on a literal scans
at memory speed, so a block without any of them is copied unchanged, and when one is present only
the lines that hold it go through the full patterns. Private keys span lines, so a block holding
``PRIVATE KEY`` is scrubbed whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Final

from .._secrets import scrub as _scrub_text

Scrubber = Callable[[str], tuple[str, int]]

# What every match of each built-in pattern contains, as a literal or a regular expression that
# starts with a literal (both scan at ~1-2 GB/s). Case-insensitive ones are searched in a lowered
# copy. Keep in step with agenttrail._secrets._SECRET_PATTERNS (tests/bundle/test_scrub.py checks).
TRIGGERS: Final[dict[str, str | re.Pattern[str]]] = {
    "private_key": "PRIVATE KEY",
    "anthropic_key": "sk-",
    "openai_key": "sk-",
    "google_key": "AIza",
    "github_token": re.compile(r"gh(?:[pousr]_|ithub_pat_)"),
    "slack_token": re.compile(r"xox[abposr]-"),
    "aws_access_key": re.compile(r"A(?:KIA|SIA)"),
    "aws_secret_key": "aws_secret_access_key",  # lowered
    "bearer_token": "bearer",  # lowered
    "url_password": "://",
    "jwt": "eyJ",
}
_LOWERED: Final = frozenset({"aws_secret_key", "bearer_token"})
_FINDERS: Final = tuple(dict.fromkeys(
    (v, k in _LOWERED) for k, v in TRIGGERS.items() if k != "private_key"))
BLOCK_CHARS: Final = 4 << 20


def _find(needle: str | re.Pattern[str], hay: str, pos: int) -> int:
    if isinstance(needle, str):
        return hay.find(needle, pos)
    m = needle.search(hay, pos)
    return m.start() if m else -1


def _trigger_lines(block: str) -> list[tuple[int, int]]:
    """(start, end) of every line in ``block`` that holds a trigger, sorted."""
    spans: set[tuple[int, int]] = set()
    lowered: str | None = None
    for needle, lower in _FINDERS:
        if lower:
            lowered = lowered if lowered is not None else block.lower()
            hay = lowered
        else:
            hay = block
        pos = _find(needle, hay, 0)
        while pos >= 0:
            start = block.rfind("\n", 0, pos) + 1
            end = block.find("\n", pos)
            end = len(block) if end < 0 else end
            spans.add((start, end))
            pos = _find(needle, hay, end)
    return sorted(spans)


def scrub_block(block: str, scrub: Scrubber = _scrub_text) -> tuple[str, int]:
    """Scrub one block of text (whole lines); returns the text and the number of secrets replaced."""
    if "PRIVATE KEY" in block:
        return scrub(block)
    lines = _trigger_lines(block)
    if not lines:
        return block, 0
    out: list[str] = []
    found = 0
    last = 0
    for start, end in lines:
        if start < last:  # lines from different literals coincide
            continue
        text, n = scrub(block[start:end])
        if n:
            out.append(block[last:start])
            out.append(text)
            last = end
            found += n
    if not found:
        return block, 0
    out.append(block[last:])
    return "".join(out), found


def iter_blocks(fh_read: Callable[[int], str], size: int = BLOCK_CHARS) -> Iterator[str]:
    """Blocks of whole lines from a text reader (the last may lack its newline)."""
    rest = ""
    while True:
        chunk = fh_read(size)
        if not chunk:
            break
        chunk = rest + chunk
        cut = chunk.rfind("\n") + 1
        if cut == 0:
            rest = chunk
            continue
        rest = chunk[cut:]
        yield chunk[:cut]
    if rest:
        yield rest
