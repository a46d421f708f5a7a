"""Files of the bundle shown in the report: progress notes, state, checkpoints, screenshots, env.txt.

Everything here is untrusted: Markdown is rendered without raw HTML and with links limited to
http(s), mailto and in-page anchors; text is decoded with replacement characters and bounded;
screenshots are embedded as data: URIs only when their bytes really are an image of a known type.
"""

from __future__ import annotations

import base64
import json
from functools import cache
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from ..bundle import model
from ..bundle.reader import Bundle

MAX_TEXT = 200_000  # per shown file
MAX_PROGRESS_FILES = 20
MAX_CHECKPOINTS = 100
MAX_JSON = 50_000
MAX_SCREENSHOT = 1_500_000
MAX_SCREENSHOTS_TOTAL = 4_000_000
MAX_SCREENSHOTS = 24
SAFE_SCHEMES = ("http://", "https://", "mailto:")

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _safe_link(url: str) -> bool:
    u = url.strip().lower()
    return u.startswith(SAFE_SCHEMES) or u.startswith("#")


@cache
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.validateLink = _safe_link  # type: ignore[method-assign]  # markdown-it's documented hook
    # images would be fetched from the network (and the report allows none): show them as links
    md.disable("image")
    renderer: Any = md.renderer
    default_link_open = renderer.rules.get("link_open")

    def link_open(_self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        tokens[idx].attrSet("target", "_blank")
        if default_link_open is not None:
            return default_link_open(tokens, idx, options, env)
        return renderer.renderToken(tokens, idx, options, env)

    md.add_render_rule("link_open", link_open)
    return md


def render_markdown(text: str) -> str:
    """Markdown → HTML with raw HTML escaped and unsafe link schemes dropped."""
    return _markdown().render(text)


def read_text(path: Path, limit: int = MAX_TEXT) -> tuple[str, bool]:
    """(text, truncated): UTF-8 with replacement characters; NUL and other C0 controls made visible."""
    with open(path, "rb") as fh:
        raw = fh.read(limit + 1)
    cut = len(raw) > limit
    text = raw[:limit].decode("utf-8", errors="replace")
    text = "".join(c if c in "\n\t" or ord(c) >= 32 else f"\\x{ord(c):02x}" for c in text)
    return text, cut


def _json_text(value: Any, limit: int = MAX_JSON) -> tuple[str, bool]:
    text = json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)
    return (text[:limit], True) if len(text) > limit else (text, False)


def env_pairs(b: Bundle) -> list[tuple[str, str]] | None:
    p = b.file(model.ENV)
    if p is None:
        return None
    text, _ = read_text(p, 64_000)
    pairs: list[tuple[str, str]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition("=")
        pairs.append((key.strip(), value.strip()) if sep else ("", line.strip()))
    return pairs


def progress_files(b: Bundle) -> list[dict[str, Any]]:
    """Agent-written handoff files: Markdown rendered safely, JSON pretty, anything else as text."""
    root = b.path / model.PROGRESS
    if not root.is_dir():
        return []
    out: list[dict[str, Any]] = []
    for p in sorted(x for x in root.rglob("*") if x.is_file())[:MAX_PROGRESS_FILES]:
        rel = p.relative_to(b.path).as_posix()
        text, cut = read_text(p)
        item: dict[str, Any] = {"path": rel, "bytes": p.stat().st_size, "cut": cut, "html": None,
                                "text": text}
        if p.suffix.lower() in (".md", ".markdown"):
            item["html"] = render_markdown(text)
        elif p.suffix.lower() == ".json":
            try:
                item["text"], item["cut"] = _json_text(json.loads(text))
            except ValueError:
                pass
        out.append(item)
    return out


def last_state(b: Bundle) -> dict[str, Any] | None:
    p = b.file(model.LAST_STATE)
    if p is None:
        return None
    text, cut = read_text(p, 5_000_000)
    try:
        pretty, cut2 = _json_text(json.loads(text))
        return {"text": pretty, "cut": cut or cut2, "bytes": p.stat().st_size}
    except ValueError:
        return {"text": text[:MAX_JSON], "cut": True, "bytes": p.stat().st_size}


def checkpoints(b: Bundle) -> tuple[int, list[dict[str, Any]]]:
    """(count, the last MAX_CHECKPOINTS checkpoints, newest first) from checkpoints.jsonl."""
    p = b.file(model.CHECKPOINTS)
    if p is None:
        return 0, []
    items: list[dict[str, Any]] = []
    count = 0
    with open(p, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if not isinstance(obj, dict):
                continue
            count += 1
            values = obj.get("values", obj.get("channel_values"))
            text, cut = _json_text(values, 20_000)
            items.append({"line": lineno, "checkpoint_id": str(obj.get("checkpoint_id") or ""),
                          "parent": str(obj.get("parent_checkpoint_id") or ""),
                          "ts": str(obj.get("ts") or ""), "step": obj.get("step"),
                          "thread_id": str(obj.get("thread_id") or ""),
                          "pending_writes": len(obj.get("pending_writes") or []),
                          "state": text, "cut": cut})
            if len(items) > MAX_CHECKPOINTS:
                items.pop(0)
    return count, items[::-1]


def workspace_diff(b: Bundle) -> dict[str, Any] | None:
    p = b.file(model.WORKSPACE_DIFF)
    if p is None:
        return None
    text, cut = read_text(p)
    return {"text": text, "cut": cut, "bytes": p.stat().st_size}


def _image_type(head: bytes) -> str | None:
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def screenshots(b: Bundle) -> list[dict[str, Any]]:
    """Screenshots as data: URIs, bounded per image and in total; the rest listed as left out."""
    root = b.path / model.SCREENSHOTS
    if not root.is_dir():
        return []
    out: list[dict[str, Any]] = []
    budget = MAX_SCREENSHOTS_TOTAL
    for p in sorted(x for x in root.rglob("*") if x.is_file()):
        rel = p.relative_to(b.path).as_posix()
        size = p.stat().st_size
        item: dict[str, Any] = {"path": rel, "bytes": size, "uri": None, "why": ""}
        out.append(item)
        if len(out) > MAX_SCREENSHOTS:
            item["why"] = f"more than {MAX_SCREENSHOTS} screenshots"
            continue
        if size > MAX_SCREENSHOT or size > budget:
            item["why"] = (f"{size / 1e6:.1f} MB is over the {MAX_SCREENSHOT / 1e6:.1f} MB limit per image"
                           if size > MAX_SCREENSHOT else "the report's screenshot budget is used up")
            continue
        data = p.read_bytes()
        mime = _image_type(data[:16])
        if mime is None:
            item["why"] = "not a PNG, JPEG, GIF or WebP image"
            continue
        budget -= size
        item["uri"] = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return out
