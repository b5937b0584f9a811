"""The `Rule` record: one diagnostic code with its meaning, effects, fix and documentation."""

from __future__ import annotations

from quantcheck._record import record
from quantcheck.rules.levels import Effect, Safety, Severity


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
    #: codes this rule's findings follow from: on a layer that also has a finding of one of
    #: them (for the same runtimes), the text report names this one on that entry instead of
    #: listing it as a problem of its own (JSON and SARIF keep both)
    follows: tuple[str, ...] = ()

    @property
    def family(self) -> str:
        return self.code[:3] + "xx"

    def runtime_effects(self) -> dict[str, Effect]:
        """The effect on every registered runtime at its newest release, as a finding of this
        rule with no effects of its own gets it: the runtime's effects table, the declared
        effects, then the runtime it is based on (what docs and `explain` show)."""
        from quantcheck.runtimes import effect_on, runtimes

        return {rt.name: effect_on(rt, self.code, None, self.effects) for rt in runtimes()}

    def effect_range(self) -> dict[str, tuple[Effect, ...]]:
        """Every effect a finding of this rule can have on each runtime (newest release): the
        rule's own first, then those some findings get from their check (`effect_variants`)."""
        from quantcheck.rules.effect_variants import VARIANTS

        more = VARIANTS.get(self.code, {})
        return {
            t: tuple(dict.fromkeys((e, *map(Effect, more.get(t, ())))))
            for t, e in self.runtime_effects().items()
        }

    @property
    def prose(self) -> str:
        """What the rule's documentation says (checks, why, evidence): where a catalog entry
        gives the reason of a built-in runtime's effect."""
        return f"{self.checks} {self.why} {self.evidence}"

    def runtime_reasons(self) -> list[str]:
        """One line per runtime whose effect the runtime's own data decides (not the catalog
        entry above): `  sdcpp: fails — why`."""
        from quantcheck.runtimes import decision, runtimes

        out = []
        for rt in runtimes():
            hit = decision(rt, self.code, self.effects, self.prose)
            if hit is None:  # tests/rules/test_runtime_decisions.py keeps this from happening
                out.append(f"  {rt.name}: no reasoned decision")
                continue
            effect, why = hit
            if rt.reasons.get(self.code) is not None or why.startswith("as "):
                out.append(f"  {rt.name}: {effect.value} — {why}")
        return out

    def doc(self) -> str:
        """The rule's documentation as plain text (what `quantcheck explain CODE` prints)."""
        fix = self.fix.value if self.fix else "none"
        from quantcheck.runtimes import get_runtime, release_summary

        def per_release(t: str) -> str:
            per = release_summary(get_runtime(t), self.code, self.effects)
            return f" ({per})" if per else ""

        effects = ", ".join(
            f"{t}: {' or '.join(e.value for e in range_)}"
            + (" (by finding)" if len(range_) > 1 else "")
            + per_release(t)
            for t, range_ in self.effect_range().items()
        )
        parts = [
            f"{self.code} {self.name} ({self.severity.value}) — {self.title}",
            "",
            f"What it checks: {self.checks}",
            "",
            f"Why it matters: {self.why}",
            "",
            f"Effect per runtime: {effects}",
            f"Evidence: {self.evidence}",
            *self.runtime_reasons(),
            "",
            "Example:",
            *("  " + line for line in self.example.splitlines()),
            "",
            f"Fix ({fix}): {self.remedy}",
        ]
        return "\n".join(parts)


def effects(*by_position: str, **by_name: str) -> dict[str, Effect]:
    """Declared per-runtime effects, written compactly in the catalogs (built-in runtimes in
    order, then any runtime by name); every built-in runtime is named, "none" by default."""
    from quantcheck.runtimes import BUILTIN
    from quantcheck.runtimes import effects as runtime_effects

    return runtime_effects(*by_position, *("none",) * (len(BUILTIN) - len(by_position)), **by_name)


def rule_in_doc_order(
    code: str,
    name: str,
    sev: Severity,
    title: str,
    checks: str,
    why: str,
    example: str,
    remedy: str,
    eff: dict[str, Effect],
    fix: Safety | None,
    evidence: str,
    *,
    action: str | None = None,
    repair: str = "",
) -> Rule:
    """A `Rule` from arguments in the order the catalogs write them: the prose (checks, why,
    example, remedy) before the effects, fix safety and evidence."""
    return Rule(
        code,
        name,
        sev,
        title,
        eff,
        fix,
        checks,
        why,
        example,
        remedy,
        evidence,
        action=action,
        repair=repair,
    )
