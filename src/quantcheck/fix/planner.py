"""Plan repairs: diagnostics -> edits on a draft -> output files for the streaming writer.

Each round checks the (planned) checkpoint, applies every applicable fix to a fresh draft and
re-checks the planned result from its header bytes alone (nothing is written); rounds repeat
until no fix applies, so `fix` converges and a second run changes nothing.

Safety: `safe` fixes keep every value (casts to F32 that are exact, relabels of 1-byte scales,
reshapes, marker rewrites); `unsafe` ones change numbers and need `unsafe=True`; `display-only`
ones are never applied. Conflicts: with several targets, an unsafe fix for a problem only some
runtimes have is refused (it would change numbers for a runtime that loads the layer fine), and
a safe fix whose result shows a new problem for another runtime is refused; both name the two
runtimes. The new problem is judged on the file the round writes, so one that the portable
edits (which no refusal stops) make with or without the fix refuses nothing. Missing markers
are added only for the unambiguous layouts of `marker_infer`:

- F8_E4M3 / F8_E5M2 [N, K] + float scalar weight_scale -> float8_e4m3fn / float8_e5m2
- I8 [N, K] + float scalar weight_scale -> int8_tensorwise
- U8 [N16, K16/2] + swizzled F8_E4M3/U8 weight_scale + scalar weight_scale_2 -> nvfp4
- F8_E4M3 [N32, K32] + swizzled U8/F8_E8M0 weight_scale -> mxfp8
- I8 [N, K/2] + BF16/F16 weight_scale and weight_zeros [K/G, N] -> awq_w4a16 (group_size G)

Never guessed: I8 [N, K] with an [N, 1] / [N] scale (row-wise vs ConvRot), W4A8, W4A4, FP8
without a scale.

`profile="portable"` (`quantcheck.fix.portable`) adds, in every round after the diagnostics'
fixes, the edits that make each quantized layer read the same in every consumer (header and
tensor markers in sync, F32 scales, explicit keys); markers are then written to both places,
and a conflict between two marker values is left as it is instead of being merged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from quantcheck.checking import deciding, run_rules, select_diagnostics
from quantcheck.diagnostics import Diagnostic, Fix, Safety
from quantcheck.fix.actions import ACTIONS, UNSAFE_ACTIONS, Refused
from quantcheck.fix.draft import Draft, Edit
from quantcheck.fix.portable import CODE as PORTABLE
from quantcheck.fix.portable import (
    PORTABLE_ACTIONS,
    PROFILES,
    Choice,
    apply_portable,
    portable_choices,
)
from quantcheck.io.header import read_header
from quantcheck.io.writer import OutFile, PlannedSource
from quantcheck.model.checkpoint import Checkpoint, Shard, assemble
from quantcheck.rules import codes as R
from quantcheck.rules.levels import Effect
from quantcheck.rules.registry import all_rules
from quantcheck.runtimes import targets_of

#: Container findings a rewrite cannot repair without losing data: `fix` refuses the input.
UNREPAIRABLE = frozenset(c for c, r in all_rules().items() if r.repair == "refuse")
#: Findings every rewrite repairs (fresh aligned header, exact tiling, fresh index).
BY_REWRITE = frozenset(c for c, r in all_rules().items() if r.repair == "rewrite")
#: Structural actions first: a layer they change gets no other edit in the same round.
ORDER = (
    "convert-scaled-fp8",
    "drop-header-metadata",
    "relabel-marker",
    "rebuild-marker",
    "header-entry-to-marker",
    "header-to-tensor-markers",
    "resolve-conflict",
    "drop-marker",
    "unmark-unquantized",
    "dequantize-layer",
    "requantize",
    "requantize-symmetric",
    "quantize-layer",
    "add-marker",
    "set-format",
)
STRUCTURAL = frozenset(ORDER[:13])


@dataclass
class Outcome:
    """What a diagnostic's fix did: applied, refused (why), or left (needs --unsafe-fixes...)."""

    diagnostic: Diagnostic
    status: str  # "applied", "refused", "unsafe", "no-fix"
    detail: str = ""


@dataclass
class FixPlan:
    """The planned repair: edits, refusals, the output files and the predicted result."""

    target: str
    edits: list[Edit] = field(default_factory=list)
    refused: dict[tuple[str, str], str] = field(default_factory=dict)
    files: list[OutFile] = field(default_factory=list)
    final: Checkpoint | None = None
    remaining: list[Diagnostic] = field(default_factory=list)
    converged: bool = True
    profile: str = "default"
    #: portable: layers (or scale tensors) left as they are: (topic, why).
    portable_refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: portable: what was chosen between targets, and what no byte-level repair can do.
    choices: list[Choice] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(e.safety != "rewrite" for e in self.edits)

    def unapplied(self, unsafe: bool) -> list[Outcome]:
        """Remaining diagnostics with why each was not fixed."""
        out = []
        for d in self.remaining:
            fix = fix_of(d)
            key = (d.code, where_of(d))
            if key in self.refused:
                out.append(Outcome(d, "refused", self.refused[key]))
            elif fix is None or fix.safety is Safety.DISPLAY or fix.action is None:
                out.append(Outcome(d, "no-fix", fix.description if fix else ""))
            elif fix.safety is Safety.UNSAFE and not unsafe:
                out.append(Outcome(d, "unsafe", fix.description))
            else:
                out.append(Outcome(d, "refused", "the fix did not remove the problem"))
        return out


def fix_of(d: Diagnostic) -> Fix | None:
    """The diagnostic's own fix, else its rule's fix action (findings made reading markers)."""
    if d.fix is not None and d.fix.action is not None:
        return d.fix
    rule = d.rule
    if rule.action is not None and rule.fix is not None:
        return Fix(rule.remedy, rule.fix, rule.action)
    return d.fix


def where_of(d: Diagnostic) -> str:
    return d.tensor or d.layer or d.file or ""


def fixable(d: Diagnostic, unsafe: bool) -> bool:
    """Whether `fix` would try to apply this diagnostic's fix."""
    if d.code in BY_REWRITE:
        return True
    f = fix_of(d)
    return (
        f is not None
        and f.action is not None
        and (f.safety is Safety.SAFE or (unsafe and f.safety is Safety.UNSAFE))
    )


# ----------------------------------------------------------------------------- planning


def unrepairable(ck: Checkpoint) -> list[Diagnostic]:
    """Container problems that make a faithful rewrite impossible."""
    bad = [d for d in ck.diagnostics if d.code in UNREPAIRABLE]
    bad += [
        d
        for s in ck.shards
        for d in s.header.diagnostics
        if d.code in UNREPAIRABLE and d not in bad
    ]
    return bad


def plan_fixes(
    ck: Checkpoint,
    *,
    target: str = "default",
    unsafe: bool = False,
    max_rounds: int = 8,
    profile: str = "default",
) -> FixPlan:
    """Plan every applicable fix for `target`; nothing is written. `profile="portable"` also
    writes every quantized layer so that every consumer reads it the same way
    (`quantcheck.fix.portable`)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown fix profile {profile!r}: choose from {', '.join(PROFILES)}")
    plan = FixPlan(target, profile=profile)
    names = [os.path.basename(s.name) for s in ck.shards]
    cur = ck
    diags = select_diagnostics(run_rules(cur), target=target)
    for _ in range(max_rounds):
        draft, files, nxt, after = _Round(cur, diags, target, unsafe, plan, names).run()
        plan.files = files
        if not draft.edits:
            plan.final, plan.remaining = cur, diags
            break
        plan.edits += draft.edits
        cur, diags = nxt, after
    else:
        plan.final, plan.remaining, plan.converged = cur, diags, False
    if profile == "portable":
        assert plan.final is not None
        plan.choices = portable_choices(plan.final, target, plan.portable_refused)
    return plan


@dataclass(frozen=True)
class _Round:
    """One planning round: the checkpoint it starts from and its findings."""

    cur: Checkpoint
    diags: list[Diagnostic]
    target: str
    unsafe: bool
    plan: FixPlan
    names: list[str]

    def run(self) -> tuple[Draft, list[OutFile], Checkpoint, list[Diagnostic]]:
        """Edits whose result breaks another runtime are refused and the round redone. A
        finding is judged on the file the round writes without the suspected edits
        (`spared`), not on the input: one the round's unstoppable edits make anyway refuses
        no fix."""
        plan = self.plan
        while True:
            draft, files, nxt, after = self.attempt(plan.refused)
            if not draft.edits:
                return draft, files, self.cur, self.diags
            # judged as check judges them: a finding of a loader that does not read the file
            # harms no verdict (rules/sglang/loaders.py)
            judged = deciding(nxt, after, targets_of(self.target))
            harm = _harm(self.diags, judged, draft.edits, self.target)
            if harm and not all(_stoppable(e) for e in draft.edits):
                spared = self.spared(harm)
                harm = _harm([*self.diags, *spared], judged, draft.edits, self.target)
            harm = {k: why for k, why in harm.items() if k not in plan.refused}
            if not harm:
                return draft, files, nxt, after
            plan.refused.update(harm)

    def attempt(
        self,
        refused: dict[tuple[str, str], str],
        portable_refused: dict[str, tuple[str, str]] | None = None,
    ) -> tuple[Draft, list[OutFile], Checkpoint, list[Diagnostic]]:
        """The round's edits on a fresh draft with the `refused` fixes left out, its planned
        files, and the checkpoint and findings they would load as (the input's when nothing
        changed)."""
        plan, diags, target = self.plan, self.diags, self.target
        portable = plan.profile == "portable"
        draft = Draft.of(self.cur, sync_header=portable)
        if portable:
            _refuse_guesses(diags, refused)
        locked = _apply_all(draft, diags, target, self.unsafe, refused)
        if portable:
            mine = plan.portable_refused if portable_refused is None else portable_refused
            apply_portable(draft, target, locked, mine)
        files = draft.files_out()
        if not draft.edits:
            return draft, files, self.cur, diags
        nxt = load_planned(files, self.names)
        return draft, files, nxt, select_diagnostics(run_rules(nxt), target=target)

    def spared(self, harm: dict[tuple[str, str], str]) -> list[Diagnostic]:
        """The findings the round's file shows even with the `harm` fixes refused, that no
        stoppable edit of that file is charged with: the unstoppable (portable) edits make
        them whatever the suspected fixes do, so they are no reason to refuse those fixes."""
        draft, _, _, after = self.attempt({**self.plan.refused, **harm}, {})
        old = {diagnostic_key(d) for d in self.diags}
        return [
            d
            for d in after
            if diagnostic_key(d) not in old
            and not any(_stoppable(e) for e in _charged(d, draft.edits))
        ]


def _stoppable(e: Edit) -> bool:
    """Whether a refusal stops the edit: a diagnostic's fix, not a portable edit (those answer
    no diagnostic, so every round makes them) or the rewrite itself."""
    return e.code != PORTABLE and e.safety != "rewrite"


def diagnostic_key(d: Diagnostic) -> tuple[str, str]:
    return d.code, d.layer or d.tensor or ""


def _affected(d: Diagnostic, scope: tuple[str, ...]) -> list[str]:
    """The target keys of `scope` (`sglang`, `sglang@0.5.19`, ...) that `d` breaks or degrades."""
    return [k for k in scope if d.effect_at(k) is not Effect.NONE]


def _harm(
    before: list[Diagnostic], after: list[Diagnostic], edits: list[Edit], target: str
) -> dict[tuple[str, str], str]:
    """Stoppable edits whose result shows a new problem for a runtime of `target`: a fix never
    trades one finding for another on a runtime it was asked about."""
    old = {diagnostic_key(d) for d in before}
    scope = targets_of(target)
    out: dict[tuple[str, str], str] = {}
    for d in after:
        hit = _affected(d, scope)
        if diagnostic_key(d) in old or not hit:
            continue
        for e in _charged(d, edits):
            if _stoppable(e):
                out.setdefault((e.code, e.where), _harm_text(e, d, hit))
    return out


def _charged(d: Diagnostic, edits: list[Edit]) -> list[Edit]:
    """The edits a new finding is charged to: those of its layer, or every edit of the round
    when no edited layer holds it."""
    real = [e for e in edits if e.safety != "rewrite"]
    layer = d.layer or (d.tensor or "").rsplit(".", 1)[0]
    mine = [e for e in real if layer and (e.where == layer or e.where.startswith(layer + "."))]
    return mine or real


def _harm_text(e: Edit, d: Diagnostic, hit: list[str]) -> str:
    """Why an edit is refused: the new finding, and the runtimes the edit would still help."""
    new = f"{d.code}: {d.message}"
    helped = [t for t in e.targets if t not in hit]
    if helped:
        return (
            f"the fix helps {', '.join(helped)} but {', '.join(hit)} would then report "
            f"{new}; run it with --target {','.join(helped)} to apply it for those runtimes"
        )
    return f"the fix would not repair it for {', '.join(hit)}, which would then report {new}"


def _apply_all(
    draft: Draft,
    diags: list[Diagnostic],
    target: str,
    unsafe: bool,
    refused: dict[tuple[str, str], str],
) -> set[str]:
    """Apply every applicable fix; returns the layers a structural fix changed."""
    locked: set[str] = set()
    rank = {a: i for i, a in enumerate(ORDER)}
    todo = [(d, fix_of(d)) for d in diags]
    todo.sort(key=lambda p: rank.get(p[1].action if p[1] and p[1].action else "", len(ORDER)))
    rewrite_logged = False
    for d, fix in todo:
        if d.code in BY_REWRITE:
            if not rewrite_logged:
                draft.log(
                    d.code,
                    where_of(d),
                    "rewrite the file (aligned header, exact offsets, fresh index)",
                    "rewrite",
                )
                rewrite_logged = True
            continue
        if fix is None or fix.action is None or fix.safety is Safety.DISPLAY:
            continue
        key = (d.code, where_of(d))
        if key in refused:
            continue
        action = fix.action
        if d.code == R.QC304.code and unsafe:
            action = "quantize-layer"
        elif fix.safety is Safety.UNSAFE and not unsafe:
            continue
        layer = d.layer or ""
        if layer in locked:
            continue
        scope = targets_of(target)
        hit = _affected(d, scope)
        if (
            (fix.safety is Safety.UNSAFE or action == "quantize-layer")
            and hit
            and set(scope) - set(hit)
        ):
            hurt = sorted(set(scope) - set(hit))
            refused[key] = (
                f"changing the numbers helps {', '.join(hit)} but hurts "
                f"{', '.join(hurt)}, which loads the layer as it is; run with "
                f"--target {hit[0]} to apply it for that runtime only"
            )
            continue
        run = ACTIONS.get(action) or PORTABLE_ACTIONS.get(action)
        if run is None:
            refused[key] = f"quantcheck has no fix action {action!r}"
            continue
        try:
            text = run(draft, d, dict(fix.params), target)
        except Refused as exc:
            if action == "quantize-layer":  # fall back to the safe fix: drop the marker
                text = f"{exc}; " + ACTIONS[fix.action](draft, d, {}, target)
            else:
                refused[key] = str(exc)
                continue
        safety = "unsafe" if action in UNSAFE_ACTIONS else "safe"
        draft.log(d.code, where_of(d), text, safety, tuple(_affected(d, scope)), layer)
        if action in STRUCTURAL and layer:
            locked.add(layer)
    return locked


#: Fixes that write one merged marker for a layer, settling a conflict by picking a source.
MERGING = frozenset({"resolve-conflict", "header-to-tensor-markers", "rewrite-marker"})


def _refuse_guesses(diags: list[Diagnostic], refused: dict[tuple[str, str], str]) -> None:
    """portable: a conflict the tensors cannot settle is not resolved by picking a source."""
    torn = {
        d.layer
        for d in diags
        if d.code == R.QC210.code and d.data.get("field") != "format" and d.layer
    }
    for d in diags:
        fix = fix_of(d)
        if d.layer in torn and fix is not None and fix.action in MERGING:
            refused.setdefault(
                (d.code, where_of(d)),
                "the portable profile does not pick one of two marker values; the layer is "
                "left as it is",
            )


# ----------------------------------------------------------------------------- actions


# ----------------------------------------------------------------------------- planned files


def load_planned(files: list[OutFile], names: list[str] | None = None) -> Checkpoint:
    """A Checkpoint read from planned (unwritten) files, exactly as it would load once written."""
    names = names or [f.name for f in files]
    shards = []
    for f, name in zip(files, names, strict=True):
        src = PlannedSource(f, name)
        shards.append(Shard(src, read_header(src)))
    return assemble(Checkpoint(inputs=list(names)), shards)
