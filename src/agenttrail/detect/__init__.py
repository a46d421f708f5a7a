"""Detectors: read-only store in, findings out. See docs/detectors.md."""

from .finding import SEVERITIES, DetectorFailure, Evidence, Finding, severity_rank
from .registry import Analysis, available, run_detectors

__all__ = ["SEVERITIES", "Analysis", "DetectorFailure", "Evidence", "Finding", "available",
           "run_detectors", "severity_rank"]
