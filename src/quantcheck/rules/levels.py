"""Severity of a finding, safety of a fix, effect on a runtime: the words every rule uses."""

from __future__ import annotations

from enum import StrEnum


class Severity(StrEnum):
    """How bad a finding is; only `error` changes the exit code by default."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 2, "warning": 1, "info": 0}[self.value]


class Safety(StrEnum):
    """How a fix may be applied: safe keeps every value, unsafe changes numbers."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY = "display-only"


class Effect(StrEnum):
    """What a problem does to one runtime."""

    FAILS = "fails"
    DEGRADED = "degraded"
    NONE = "none"
