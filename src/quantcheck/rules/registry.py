"""One registry of stable diagnostic codes. Codes are never reused; retired codes stay listed."""

from __future__ import annotations

from functools import cache

from quantcheck._record import record
from quantcheck.diagnostics import Effect, Safety, Severity


@record
class Rule:
    """A diagnostic code with its meaning, per-target effect and documentation.

    What `quantcheck fix` does for the rule is said here only: `fix` is the safety of the fix
    its diagnostics carry; `action` the fix action run for diagnostics that carry none of their
    own (markers that could not be read); `repair` is "rewrite" when any rewrite of the file
    repairs it, "refuse" when the input cannot be rewritten faithfully.
    """

    code: str
    name: str
    severity: Severity
    title: str
    effects: dict[str, Effect]
    fix: Safety | None
    checks: str
    why: str
    example: str
    remedy: str
    evidence: str
    retired: bool = False
    action: str | None = None
    repair: str = ""

    @property
    def family(self) -> str:
        return self.code[:3] + "xx"

    def doc(self) -> str:
        """The rule's documentation as plain text (what `quantcheck explain CODE` prints)."""
        fix = self.fix.value if self.fix else "none"
        effects = ", ".join(f"{t}: {e.value}" for t, e in self.effects.items())
        parts = [
            f"{self.code} {self.name} ({self.severity.value}) — {self.title}",
            "",
            f"What it checks: {self.checks}",
            "",
            f"Why it matters: {self.why}",
            "",
            f"Effect per runtime: {effects}",
            f"Evidence: {self.evidence}",
            "",
            "Example:",
            *("  " + line for line in self.example.splitlines()),
            "",
            f"Fix ({fix}): {self.remedy}",
        ]
        return "\n".join(parts)


FAMILIES = {
    "QC1": "container (safetensors structure)",
    "QC2": "markers (comfy_quant and _quantization_metadata)",
    "QC3": "layers (tensors, dtypes and shapes per format)",
    "QC4": "numeric (deep checks of stored values)",
    "QC5": "shards and indexes",
    "QC6": "runtime compatibility (format support and mixes)",
}


def effects(*by_position: str, **by_name: str) -> dict[str, Effect]:
    """Declared per-runtime effects, written compactly in the catalogs (built-in runtimes in
    order, then any runtime by name); every built-in runtime is named, "none" by default."""
    from quantcheck.runtimes import BUILTIN
    from quantcheck.runtimes import effects as runtime_effects

    return runtime_effects(*by_position, *("none",) * (len(BUILTIN) - len(by_position)),
                           **by_name)


@cache
def all_rules() -> dict[str, Rule]:
    """Every rule by code, from all catalog modules; duplicate codes or names are a bug."""
    from quantcheck.rules import (
        catalog_container,
        catalog_layers,
        catalog_markers,
        catalog_numeric,
        catalog_runtime,
        catalog_shards,
    )

    table: dict[str, Rule] = {}
    names: set[str] = set()
    for module in (
        catalog_container,
        catalog_markers,
        catalog_layers,
        catalog_numeric,
        catalog_shards,
        catalog_runtime,
    ):
        for rule in module.RULES:
            if rule.code in table or rule.name in names:
                raise RuntimeError(f"duplicate rule {rule.code} {rule.name}")
            table[rule.code] = rule
            names.add(rule.name)
    return dict(sorted(table.items()))


def get_rule(code: str) -> Rule:
    """The rule for a code; KeyError for an unknown code."""
    return all_rules()[code]


def find_rule(text: str) -> Rule | None:
    """Look a rule up by code (any case) or kebab-case name."""
    rules = all_rules()
    key = text.strip()
    if key.upper() in rules:
        return rules[key.upper()]
    for rule in rules.values():
        if rule.name == key.lower():
            return rule
    return None
