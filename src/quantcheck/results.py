"""The result of a check: diagnostics plus per-target verdicts and counts."""

from __future__ import annotations

from quantcheck._record import factory, record
from quantcheck.diagnostics import Diagnostic, Effect, Severity
from quantcheck.runtimes import runtime_names

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1


@record
class Report:
    """Everything `check` found, ready for a renderer."""

    inputs: list[dict[str, Any]]
    diagnostics: list[Diagnostic]
    targets: tuple[str, ...] = factory(runtime_names)
    stats: dict[str, int] = factory(dict)

    def target_status(self, target: str) -> dict[str, Any]:
        """ok / degraded / fails for one runtime, with how many problems affect it."""
        fails = degraded = 0
        for d in self.diagnostics:
            eff = d.effective_effects.get(target, Effect.NONE)
            if eff is Effect.FAILS:
                fails += 1
            elif eff is Effect.DEGRADED:
                degraded += 1
        status = "fails" if fails else "degraded" if degraded else "ok"
        return {"status": status, "errors": fails, "degraded": degraded}

    def count(self, severity: Severity) -> int:
        return sum(1 for d in self.diagnostics if d.effective_severity is severity)

    def exit_code(self, fail_on: Severity = Severity.ERROR) -> int:
        """1 when any diagnostic at or above `fail_on` applies, else 0."""
        worst = max((d.effective_severity.rank for d in self.diagnostics), default=-1)
        return 1 if worst >= fail_on.rank else 0

    def summary(self) -> dict[str, Any]:
        return {
            "errors": self.count(Severity.ERROR),
            "warnings": self.count(Severity.WARNING),
            "infos": self.count(Severity.INFO),
            **self.stats,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": "quantcheck",
            "inputs": self.inputs,
            "targets": {t: self.target_status(t) for t in self.targets},
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "summary": self.summary(),
        }
