"""Widgets of the TUI: the virtual table and the detail pane."""
