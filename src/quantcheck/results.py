"""The result of a check: diagnostics plus per-target verdicts and counts."""

from __future__ import annotations

from quantcheck._record import factory, record
from quantcheck._version import document_head
from quantcheck.diagnostics import Diagnostic, Effect, Severity, distinct_kinds, kind_of
from quantcheck.runtimes import default_targets, get_runtime, loaders_of, registry

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1


@record
class Report:
    """Everything `check` found, ready for a renderer."""

    inputs: list[dict[str, Any]]
    diagnostics: list[Diagnostic]
    targets: tuple[str, ...] = factory(default_targets)
    stats: dict[str, int] = factory(dict)
    #: per runtime with several modelled releases: `release_matrix` (computed before the
    #: target filter, so it covers every release whatever `targets` shows)
    releases: dict[str, dict[str, Any]] = factory(dict)
    #: per target key: extra summary keys its runtime computes (sglang: `path`, the reader
    #: that takes the file, `path_reason`, `path_config`)
    paths: dict[str, dict[str, Any]] = factory(dict)
    #: per target key whose runtime has GPU decisions, with `--gpu`: {G: entry} and the
    #: "needs >= X" summary (`rules/gpu/report.py gpu_targets`)
    gpu: dict[str, dict[str, Any]] = factory(dict)
    gpu_needs: dict[str, dict[str, Any]] = factory(dict)
    #: the model family (`quantcheck.families.Detection.to_json`); empty when not detected
    family: dict[str, Any] = factory(dict)

    def target_status(self, target: str, family: str | None = None) -> dict[str, Any]:
        """ok / degraded / fails for one runtime, with how many problems affect it (and, for
        a runtime with a `paths` hook, which of its readers takes the file). For a runtime
        whose loaders differ (sglang: `loaders`), the status and the counts are the deciding
        loader's (`loader`): the one the model family picks (`family`, by default the one its
        `paths` entry detected), else `--transformer-weights-path` (the runtime's `loaders`
        hook, `Loaders.chosen`); every loader's verdict is in `loaders`."""
        chosen, loaders = self.loader_verdicts(target, family)
        if chosen is not None:
            v = loaders[chosen]
            out: dict[str, Any] = {
                "status": v["status"],
                "errors": v["errors"],
                "degraded": v["degraded"],
                "loader": chosen,
            }
        else:
            fails, degraded = self._tally(target)
            status = "fails" if fails else "degraded" if degraded else "ok"
            out = {"status": status, "errors": fails, "degraded": degraded}
        extra = self.paths.get(target, {})
        if loaders:
            shown = {n: {"status": v["status"], "reason": v["reason"]} for n, v in loaders.items()}
            extra = {**extra, "loaders": shown}
        if target in self.gpu:
            extra = {**extra, "gpu": self.gpu[target], "gpu_needs": self.gpu_needs[target]}
        return {**out, **extra}

    def loader_verdicts(
        self, target: str, family: str | None = None
    ) -> tuple[str | None, dict[str, dict[str, Any]]]:
        """(the deciding loader, every loader's verdict with its counts and codes) of a
        target whose runtime has several loaders (its `loaders` hook, `Loaders.verdicts`);
        (None, {}) for any other."""
        extra = self.paths.get(target, {})
        specs = extra.get("loaders")
        if not specs:
            return None, {}
        # tables and renderers ask per column and line: counted once per list of findings
        memo = (target, family, id(self.diagnostics), len(self.diagnostics))
        known: dict[Any, Any] = self.__dict__.setdefault("_loader_verdicts", {})
        hit = known.get(memo)
        if hit is not None and hit[0] is self.diagnostics:
            return hit[1], hit[2]
        hook = _loaders(target)
        loaders = hook.verdicts(self.diagnostics, target, specs)
        fam = family if family is not None else extra.get("loader_family")
        chosen = hook.chosen(fam, loaders)
        known[memo] = (self.diagnostics, chosen, loaders)
        return chosen, loaders

    def decides(self, d: Diagnostic, target: str) -> bool:
        """Whether finding `d` counts in `target`'s verdict: it breaks or degrades the target
        and, for a runtime with several loaders, the deciding one reads it (its `loaders`
        hook, `Loaders.reads`)."""
        if d.effect_at(target) is Effect.NONE:
            return False
        specs = self.paths.get(target, {}).get("loaders")
        if not specs:
            return True
        hook = _loaders(target)
        chosen = hook.chosen(self.paths[target].get("loader_family"), specs)
        return chosen is None or hook.reads(d, chosen, specs[chosen])

    def status(self, target: str, family: str | None = None) -> str:
        """`target_status(target, family)["status"]` alone (tables ask it per checkpoint and
        column)."""
        if not self.diagnostics:
            return "ok"
        chosen, loaders = self.loader_verdicts(target, family)
        if chosen is not None:
            return str(loaders[chosen]["status"])
        fails, degraded = self._tally(target)
        return "fails" if fails else "degraded" if degraded else "ok"

    def _tally(self, target: str) -> tuple[int, int]:
        """How many findings break / degrade target key `target`."""
        fails = degraded = 0
        # a finding's effect depends only on its code and given effects: findings sharing
        # both (copies made per layer share the effects dict itself) are looked up once
        seen: dict[tuple[str, int], Effect] = {}
        for d in self.diagnostics:
            ident = (d.code, id(d.effects))
            eff = seen.get(ident)
            if eff is None:
                eff = seen[ident] = d.effect_at(target)
            if eff is Effect.FAILS:
                fails += 1
            elif eff is Effect.DEGRADED:
                degraded += 1
        return fails, degraded

    def severity_counts(self) -> dict[Severity, int]:
        """How many findings there are of each severity (one pass over them)."""
        out = dict.fromkeys(Severity, 0)
        for d in self.diagnostics:
            out[d.effective_severity] += 1
        return out

    def count(self, severity: Severity) -> int:
        return self.severity_counts()[severity]

    def exit_code(self, fail_on: Severity = Severity.ERROR) -> int:
        """1 when any diagnostic at or above `fail_on` applies, else 0."""
        worst = max((d.effective_severity.rank for d in self.diagnostics), default=-1)
        return 1 if worst >= fail_on.rank else 0

    def summary(self) -> dict[str, Any]:
        counts = self.severity_counts()
        return {
            "errors": counts[Severity.ERROR],
            "warnings": counts[Severity.WARNING],
            "infos": counts[Severity.INFO],
            **self.stats,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            **document_head("check", SCHEMA_VERSION),
            "inputs": self.inputs,
            "targets": {t: self.target_status(t) for t in self.targets},
            "diagnostics": [d.to_json(self.targets) for d in self.diagnostics],
            "summary": self.summary(),
            **({"family": self.family} if self.family else {}),
            **({"releases": self.releases} if self.releases else {}),
        }


def release_matrix(
    diags: list[Diagnostic],
    keys: tuple[str, ...],
    loaders: dict[str, dict[str, dict[str, Any]]] | None = None,
) -> dict[str, dict[str, Any]]:
    """For each runtime among target keys `keys` that models several releases: the status
    (ok / degraded / fails) per release, oldest first, the oldest release that loads the file
    correctly (`oldest_ok`), and `needs`: the release from which every newer modelled release
    loads it (None when the newest does not). `loaders`: per runtime whose verdict is one of
    its loaders' (sglang), each release's `paths` entry (`release_paths`): a release's status
    is then its deciding loader's, as the target's status is (the runtime's `loaders` hook)."""
    picks = _picks(loaders or {})
    if picks:  # the loaders count a finding by the loaders it names, too
        by_kind = {
            (
                kind_of(d),
                tuple(d.data.get("loaders") or ()),
                d.data.get("loader_releases") and tuple(d.data["loader_releases"]),
            ): d
            for d in diags
        }
    else:
        by_kind = distinct_kinds(diags)  # effects depend only on code + given effects
    memo = (tuple(by_kind), keys, tuple((n, tuple(p.items())) for n, p in picks.items()))
    known = _MATRICES
    entries = known.get(memo)
    if entries is None:
        statuses: dict[str, dict[str, str]] = {}
        kinds = list(by_kind.values())
        for key in keys:
            name = key.partition("@")[0]
            rt = get_runtime(name)
            if name in statuses or len(rt.releases) < 2:
                continue
            per: dict[str, str] = {}
            hook = _loaders(name) if name in picks else None
            for rel in rt.releases:
                at = f"{name}@{rel.name}"
                pick = picks.get(name, {}).get(rel.name)
                effs = {d.effect_at(at) for d in kinds if pick is None or _counts(d, hook, pick)}
                per[rel.name] = (
                    "fails"
                    if Effect.FAILS in effs
                    else "degraded"
                    if Effect.DEGRADED in effs
                    else "ok"
                )
            statuses[name] = per
        entries = {name: _entry(per) for name, per in statuses.items()}
        if len(known) >= 1024:
            known.clear()
        known[memo] = entries
    # each report gets its own dicts (the memo's are shared by every checkpoint)
    return {name: {**e, "statuses": dict(e["statuses"])} for name, e in entries.items()}


def _picks(loaders: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """{runtime: {release: (deciding loader, its reading)}} of `release_matrix`'s `loaders`."""
    if not loaders:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name, per in loaders.items():
        hook = _loaders(name)
        for rel, entry in per.items():
            chosen = hook.chosen(entry.get("loader_family"), entry["loaders"])
            if chosen is not None:
                spec = entry["loaders"][chosen]
                key = (chosen, spec["mode"], spec.get("release"))
                out.setdefault(name, {})[rel] = key
    return out


def _counts(d: Diagnostic, hook: Any, pick: tuple[str, str, str | None]) -> bool:
    """Whether the deciding loader `pick` (name, mode, release) of the runtime whose
    `loaders` hook is `hook` reads finding `d`."""
    name, mode, release = pick
    return bool(hook.reads(d, name, {"mode": mode, "release": release}))


def _loaders(target: str) -> registry.Loaders:
    """The `loaders` hook of `target`'s runtime, which has loaders (its `paths` said so)."""
    hook = loaders_of(target)
    if hook is None:  # a runtime's `paths` gave `loaders` without the hook to judge them
        raise LookupError(f"{target}: loaders in its paths entry, but no `loaders` hook")
    return hook


#: {(kinds of findings, target keys, deciding loaders): `_entry` per runtime}: many
#: checkpoints share a handful of kinds (a clean one has none), so the matrix is computed once
#: per combination.
_MATRICES: dict[Any, dict[str, dict[str, Any]]] = registry.runtime_cache()


def _entry(per: dict[str, str]) -> dict[str, Any]:
    names = list(per)
    oldest_ok = next((r for r in names if per[r] == "ok"), None)
    needs = None
    for r in reversed(names):
        if per[r] != "ok":
            break
        needs = r
    return {"statuses": per, "oldest_ok": oldest_ok, "needs": needs}


def merge_releases(matrices: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Several checkpoints' release matrices as one: per release the worst status, so `needs`
    is the release every one of them loads on."""
    rank = {"ok": 0, "degraded": 1, "fails": 2}
    worst: dict[str, dict[str, str]] = {}
    for m in matrices:
        for name, entry in m.items():
            per = worst.setdefault(name, {})
            for rel, st in entry["statuses"].items():
                if rank[st] >= rank[per.get(rel, "ok")]:
                    per[rel] = st
    return {name: _entry(per) for name, per in worst.items()}


def release_line(name: str, entry: dict[str, Any]) -> str:
    """One line of the matrix: `sglang needs >= 0.5.20: 0.5.18 fails · 0.5.19 fails · …`."""
    needs, oldest = entry["needs"], entry["oldest_ok"]
    names = list(entry["statuses"])
    if needs is not None:
        head = (
            f"{name}: loads on every modelled release"
            if needs == names[0]
            else f"{name} needs >= {needs}"
        )
    elif oldest is not None:
        ok = [r for r, s in entry["statuses"].items() if s == "ok"]
        head = f"{name}: loads correctly only on {', '.join(ok)}"
    else:
        head = f"{name}: no modelled release loads it correctly"
    cells = " · ".join(f"{r} {s}" for r, s in entry["statuses"].items())
    return f"{head} ({cells})"
