"""The Textual TUI over the DuckDB store (``agenttrail tui BUNDLE...``); see docs/tui.md."""
