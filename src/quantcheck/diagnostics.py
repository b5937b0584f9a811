"""Diagnostics as data: what was found, where, which runtimes it breaks, and how to fix it."""

from __future__ import annotations

from types import MappingProxyType

from quantcheck._record import record
from quantcheck.rules.levels import Effect as Effect  # re-exported with Safety and Severity:
from quantcheck.rules.levels import Safety as Safety  # diagnostics speak these words
from quantcheck.rules.levels import Severity as Severity

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.rules.registry import Rule


def __getattr__(name: str) -> Any:
    """`TARGETS`: the registered runtimes' names (quantcheck.runtimes), looked up on use."""
    if name == "TARGETS":
        from quantcheck.runtimes import runtime_names

        return runtime_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@record
class Fix:
    """A proposed fix: human text, its safety, and a machine-readable action for the planner."""

    description: str
    safety: Safety
    action: str | None = None
    params: tuple[tuple[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "safety": self.safety.value,
            "action": self.action,
            "params": dict(self.params),
        }


#: The `data` of a diagnostic that has none: one shared read-only empty mapping, not a dict per
#: finding (a checkpoint can draw hundreds of thousands of findings).
NO_DATA: Any = MappingProxyType({})


@record(slots=True)
class Diagnostic:
    """One finding. Severity, name and per-target effects default to the rule's registry entry.

    `code` is given as the rule itself (`quantcheck.rules.codes.QC301`) and stored as its code.
    Instances are compact (`__slots__`, no per-instance dict, shared empty `data`, effects
    resolved through a cache shared by all findings): memory stays a small multiple of the
    header when every tensor draws a finding.
    """

    code: str
    message: str
    file: str | None = None
    tensor: str | None = None
    layer: str | None = None
    pointer: str | None = None
    fix: Fix | None = None
    effects: dict[str, Effect] | None = None
    severity: Severity | None = None
    data: dict[str, Any] = NO_DATA

    if TYPE_CHECKING:  # what `@record` generates, with `code` also taking the rule itself

        def __init__(
            self,
            code: str | Rule,
            message: str,
            file: str | None = None,
            tensor: str | None = None,
            layer: str | None = None,
            pointer: str | None = None,
            fix: Fix | None = None,
            effects: dict[str, Effect] | None = None,
            severity: Severity | None = None,
            data: dict[str, Any] | None = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        if type(self.code) is not str:  # given as the rule itself (see `__init__` above)
            self.code = self.code.code  # type: ignore[attr-defined]  # `code` holds a Rule here

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Picklable (results cross process boundaries): the shared empty `data` is left out,
        so the copy shares this process's `NO_DATA` again."""
        fields = (self.code, self.message, self.file, self.tensor, self.layer, self.pointer)
        rest = (self.fix, self.effects, self.severity)
        return Diagnostic, fields + rest + (() if self.data is NO_DATA else (self.data,))

    @property
    def rule(self) -> Rule:
        return _rule_of(self.code)

    @property
    def name(self) -> str:
        return self.rule.name

    @property
    def effective_severity(self) -> Severity:
        return self.severity or self.rule.severity

    @property
    def effective_effects(self) -> dict[str, Effect]:
        """The effect on every registered runtime (`quantcheck.runtimes.effect_on`)."""
        runtimes = _RUNTIMES or _runtimes()
        if _EFFECTS_GENERATION[0] != runtimes.generation:  # a runtime was (un)registered
            _EFFECTS.clear()
            _EFFECTS_GENERATION[0] = runtimes.generation
        given = self.effects
        # renderers ask often, and many findings share a code and given effects: one shared
        # resolved dict per (code, effects), nothing stored on the finding
        key = self.code if given is None else (self.code, *given.items())
        out = _EFFECTS.get(key)
        if out is None:
            out = (
                given
                if given is not None and runtimes.resolved(given)
                else runtimes.resolve_effects(self.code, given, self.rule.effects)
            )
            _EFFECTS[key] = out
        return out

    @property
    def targets(self) -> list[str]:
        """The runtimes this problem breaks or degrades."""
        return [t for t, e in self.effective_effects.items() if e is not Effect.NONE]

    def effect_at(self, key: str) -> Effect:
        """The effect on one target key: `sglang` (its newest release) or `sglang@0.5.19`."""
        if "@" not in key:
            return self.effective_effects.get(key, Effect.NONE)
        runtimes = _RUNTIMES or _runtimes()
        given = self.effects
        memo = (key, self.code, None if given is None else tuple(given.items()))
        if _AT[0] != runtimes.generation:
            _AT[:] = [runtimes.generation, {}]
        hit: Effect | None = _AT[1].get(memo)
        if hit is None:
            hit = _AT[1][memo] = runtimes.effect_at(key, self.code, given, self.rule.effects)
        return hit

    def release_effects(self) -> dict[str, dict[str, Effect]]:
        """Effects per runtime and modelled release, only for runtimes where they differ
        between releases (empty for most findings). Shared by the findings of one kind: do
        not modify."""
        runtimes = _RUNTIMES or _runtimes()
        given = self.effects
        memo = ("releases", self.code, None if given is None else tuple(given.items()))
        if _AT[0] != runtimes.generation:
            _AT[:] = [runtimes.generation, {}]
        hit: dict[str, dict[str, Effect]] | None = _AT[1].get(memo)
        if hit is not None:
            return hit
        out: dict[str, dict[str, Effect]] = {}
        for rt in runtimes.runtimes():
            if len(rt.releases) < 2:
                continue
            per = {r.name: self.effect_at(f"{rt.name}@{r.name}") for r in rt.releases}
            if len(set(per.values())) > 1:
                out[rt.name] = per
        _AT[1][memo] = out
        return out

    def affected_releases(self) -> dict[str, list[str]]:
        """Per runtime whose effects differ between its releases: the releases (oldest first)
        this finding breaks or degrades (the JSON / SARIF `releases`)."""
        return {
            rt: [r for r, e in per.items() if e is not Effect.NONE]
            for rt, per in self.release_effects().items()
        }

    def target_labels(self, keys: tuple[str, ...] | None = None) -> list[str]:
        """The runtimes this finding affects as the text report names them: `sglang` (its
        newest release, or every release), and, for a runtime whose releases differ and that
        `keys` target by release (`sglang@0.5.19`, `sglang@all`; None: every runtime), the
        releases it affects: `sglang@0.5.19`, `sglang ≤0.5.21`. Only runtimes `keys` name are
        listed (a default report does not name runtimes it was not asked about)."""
        from quantcheck.runtimes.registry import release_label

        runtimes = _RUNTIMES or _runtimes()
        given = self.effects
        memo = ("labels", keys, self.code, None if given is None else tuple(given.items()))
        if _AT[0] != runtimes.generation:
            _AT[:] = [runtimes.generation, {}]
        hit: tuple[str, ...] | None = _AT[1].get(memo)
        if hit is not None:
            return list(hit)
        per_release = self.release_effects()
        by_release = None if keys is None else {k.partition("@")[0] for k in keys if "@" in k}
        named = None if keys is None else {k.partition("@")[0] for k in keys}
        out = []
        for name, eff in self.effective_effects.items():
            if named is not None and name not in named:
                continue
            per = per_release.get(name)
            if per is None or (by_release is not None and name not in by_release):
                if eff is not Effect.NONE:
                    out.append(name)
                continue
            out.append(
                release_label(name, list(per), {r for r, e in per.items() if e is not Effect.NONE})
            )
        _AT[1][memo] = tuple(out)
        return out

    def affects_any_release(self) -> bool:
        """Whether any modelled release of any runtime is broken or degraded by this.

        An effect a non-default runtime's own `effects` table gives this code (what a generic
        finding does to that runtime) does not count: the finding stays general, so reports
        for other targets keep showing it as before that runtime was added."""
        runtimes = _RUNTIMES or _runtimes()
        given = self.effects
        memo = ("*", self.code, None if given is None else tuple(given.items()))
        if _AT[0] != runtimes.generation:
            _AT[:] = [runtimes.generation, {}]
        hit = _AT[1].get(memo)
        if hit is None:
            table_only = {
                rt.name
                for rt in runtimes.runtimes()
                if not rt.default_target and self.code in rt.effects
            }
            hit = _AT[1][memo] = any(t not in table_only for t in self.targets) or any(
                t not in table_only for t in self.release_effects()
            )
        return bool(hit)

    def sort_key(self) -> tuple[str, str, str, str]:
        return (self.file or "", self.layer or self.tensor or "", self.code, self.message)

    def to_json(self, keys: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The finding as JSON; `keys` (a report's target keys: `sglang`, `comfyui@0271a469`)
        gives `targets` and `effects` per key, the effect on exactly that release, and limits
        `release_effects` to the runtimes they name (None: every registered runtime, newest)."""
        eff = self.effective_effects
        rel = self.release_effects()
        if keys is not None:
            eff = {k: self.effect_at(k) for k in keys}
            names = {k.partition("@")[0] for k in keys}
            rel = {t: per for t, per in rel.items() if t in names}
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.effective_severity.value,
            "message": self.message,
            "file": self.file,
            "tensor": self.tensor,
            "layer": self.layer,
            "pointer": self.pointer,
            "targets": [t for t, e in eff.items() if e is not Effect.NONE],
            "effects": {t: e.value for t, e in eff.items()},
            "fix": self.fix.to_json() if self.fix else None,
            # sglang: the loaders this finding concerns (rules/sglang/loaders.py), if not all
            **({"loaders": list(self.data["loaders"])} if "loaders" in self.data else {}),
            # the loaders that read it where the loader that decides does not, and False when
            # it decides no verdict (a note: rules/sglang/loaders.py `decided`)
            **({"read_by": list(self.data["read_by"])} if "read_by" in self.data else {}),
            **({"decides": False} if self.data.get("decides") is False else {}),
            **(
                {
                    "release_effects": {
                        rt: {r: e.value for r, e in per.items()} for rt, per in rel.items()
                    },
                    "releases": {
                        rt: [r for r, e in per.items() if e is not Effect.NONE]
                        for rt, per in rel.items()
                    },
                }
                if rel
                else {}
            ),
        }


def _rule_of(code: str) -> Rule:
    """The rule of `code` (KeyError for an unknown one): only its catalog is imported on
    first use (`rules.codes.rule_of`); the answers are renewed when a runtime with its own
    rules is registered or removed."""
    global _RULES
    generation = _runtimes().generation
    if _RULES is None or _RULES[0] != generation:
        _RULES = (generation, {})
    known = _RULES[1]
    rule = known.get(code)
    if rule is None:
        from quantcheck.rules.codes import rule_of

        rule = known[code] = rule_of(code)
    return rule


_RULES: tuple[int, dict[str, Rule]] | None = None


def _runtimes() -> Any:
    """The runtime registry module (imported on first use: importing it registers the built-in
    runtimes, which is start-up work a diagnostic should not cost before it is needed)."""
    global _RUNTIMES
    if _RUNTIMES is None:
        import quantcheck.runtimes
        import quantcheck.runtimes.registry

        _RUNTIMES = quantcheck.runtimes.registry
    return _RUNTIMES


_RUNTIMES: Any = None
#: [registry generation, {(target key, code, given effects): effect}]: findings of one rule
#: with the same given effects share their per-release lookups (thousands of layers, few keys)
_AT: list[Any] = [-1, {}]
#: Resolved effects by code (and given effects), valid for registry generation
#: `_EFFECTS_GENERATION[0]`.
_EFFECTS: dict[object, dict[str, Effect]] = {}
_EFFECTS_GENERATION: list[object] = [None]


def json_pointer(*parts: str | int) -> str:
    """An RFC 6901 pointer built from unescaped reference tokens."""
    out = []
    for p in parts:
        s = str(p).replace("~", "~0").replace("/", "~1")
        out.append("/" + s)
    return "".join(out)


def kind_of(d: Diagnostic) -> tuple[str, tuple[tuple[str, Effect], ...] | None]:
    """What a finding's effects depend on: its code and the effects its check gave it."""
    return d.code, None if d.effects is None else tuple(d.effects.items())


def distinct_kinds(diags: list[Diagnostic]) -> dict[Any, Diagnostic]:
    """One finding per `kind_of` (thousands of findings are usually a handful of kinds)."""
    out: dict[Any, Diagnostic] = {}
    # (code, the given effects object) -> that object: findings sharing both are one kind
    # (holding the object keeps its id from being reused while the loop runs)
    seen: dict[tuple[str, int], Any] = {}
    for d in diags:
        ident = (d.code, id(d.effects))
        if ident not in seen:
            seen[ident] = d.effects
            out.setdefault(kind_of(d), d)
    return out
