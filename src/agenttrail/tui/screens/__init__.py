"""The TUI's views (one per tab) and its modal screens."""
