"""The self-contained HTML postmortem: ``render_report(store) -> str``."""

from .render import render_report

__all__ = ["render_report"]
