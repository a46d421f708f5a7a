"""Numbers and commands as a person reads them in a one-sentence summary."""

from __future__ import annotations

import json


def human_tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f}M"
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    if n >= 1_000:
        return f"{n / 1000:.1f}k"
    return str(n)


def percent(share: float) -> str:
    return f"{share * 100:.0f}%"


def command_text(tool: str, arguments: str | None, input_hash: str) -> str:
    """``npm install`` for run_command({"cmd": "npm install"}); ``tool#hash`` when args are private."""
    if arguments:
        try:
            args = json.loads(arguments)
        except ValueError:
            return f"{tool}({arguments[:80]})"
        if isinstance(args, dict):
            if "kwargs" in args and "args" in args:  # OpenLLMetry's {"args": [], "kwargs": {...}}
                args = args["kwargs"] or {"args": args["args"]}
            strings = [v for v in args.values() if isinstance(v, str)]
            if len(args) == 1 and strings:
                return strings[0][:120]
            return f"{tool}({', '.join(f'{k}={v!r}' for k, v in list(args.items())[:3])})"[:160]
    return f"{tool}#{input_hash[:8]}" if input_hash else tool


def short_error(error: str | None, limit: int = 120) -> str | None:
    if not error:
        return None
    line = error.strip().splitlines()[0] if error.strip() else ""
    return line[:limit] or None
