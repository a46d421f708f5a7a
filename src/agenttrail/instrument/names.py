"""Re-export of :mod:`agenttrail.names` (the one module that spells every emitted name)."""

from ..names import *  # noqa: F403
