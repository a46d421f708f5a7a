"""The self-contained HTML postmortem: ``render_report(store) -> str``."""

from .render import Limits, render_report

__all__ = ["Limits", "render_report"]
