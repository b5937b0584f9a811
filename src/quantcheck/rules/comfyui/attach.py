"""ComfyUI's view of layers its key plumbing marks from a header entry of another name.

quantcheck attaches a header `_quantization_metadata` entry to the layer of exactly its name
(what sglang does). ComfyUI's loader converts the header twice, around the model-prefix strip
(`keys.py`): an entry `proj_in` marks the stored `model.diffusion_model.proj_in` once more
than 5 keys carry that prefix. For such a layer the findings of the unmarked view (QC314) stop
concerning ComfyUI, and the marked view's findings (the layer with that entry as its marker)
are ComfyUI's: sglang still sees the layer unmarked. Forks of ComfyUI's loader (`based_on`
it) follow it, as for every other code.
"""

from __future__ import annotations

from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules.comfyui.keys import checkpoint_plumbing
from quantcheck.rules.engine import format_findings, renamed
from quantcheck.rules.levels import Effect
from quantcheck.runtimes import runtimes

COMFYUI = "comfyui"


def comfyui_family() -> frozenset[str]:
    """ComfyUI and the runtimes that load files through its code (`based_on` it)."""
    names = {COMFYUI}
    grew = True
    while grew:
        grew = False
        for rt in runtimes():
            if rt.based_on in names and rt.name not in names:
                names.add(rt.name)
                grew = True
    return frozenset(names)


def _with(d: Diagnostic, effects: dict[str, Effect], note: str = "") -> Diagnostic:
    return Diagnostic(
        d.code,
        d.message + note,
        file=d.file,
        tensor=d.tensor,
        layer=d.layer,
        pointer=d.pointer,
        fix=d.fix,
        effects=effects,
        severity=d.severity,
        data=d.data,
    )


def revise(ck: Checkpoint, diags: list[Diagnostic]) -> list[Diagnostic]:
    """`diags` with ComfyUI's view of the layers its plumbing marks from another name."""
    p = checkpoint_plumbing(ck)
    if p is None:
        return diags
    marked = {
        prefix: ck.markers[name]
        for prefix, name in p.marks.items()
        if ck.layers[prefix].marker is None and name in ck.markers
    }
    if not marked:
        return diags
    family = comfyui_family()
    out = []
    for d in diags:
        if d.layer in marked and d.code.startswith("QC3"):
            # the unmarked view's findings: ComfyUI builds the layer marked
            effs = d.effective_effects
            note = (
                f"; ComfyUI marks it from the header entry {p.marks[d.layer]!r} (its second "
                f"convert_old_quants pass, after stripping {p.prefix!r})"
            )
            d = _with(d, {**effs, **dict.fromkeys(family & effs.keys(), Effect.NONE)}, note)
        out.append(d)
    # kind -> (the layer found on, its findings, whether a message names that layer): the
    # layers of one kind draw the same findings, renamed (as in the engine)
    seen: dict[object, tuple[str, list[Diagnostic], bool]] = {}
    for prefix, marker in marked.items():
        view = Layer(prefix, ck.layers[prefix].tensors, marker)
        # what the format rules read of the view (layer_kinds.signature less the name's
        # embedding test, which only sglang's own rules read)
        kind = (
            repr(marker.fields),
            tuple((sfx, t.dtype, t.shape, t.file) for sfx, t in view.tensors.items()),
        )
        hit = seen.get(kind)
        if hit is not None and not hit[2]:
            out.extend(renamed(d, hit[0], view) for d in hit[1])
            continue
        found = list(_marked_view(view, family))
        seen[kind] = (prefix, found, any(prefix in d.message for d in found))
        out.extend(found)
    return out


def _marked_view(view: Layer, family: frozenset[str]) -> Iterator[Diagnostic]:
    """The format findings of the layer `view` (carrying the header entry's marker), as they
    concern ComfyUI only."""
    for d in format_findings(view, False, False):
        effs = d.effective_effects
        if effs.get(COMFYUI, Effect.NONE) is Effect.NONE:
            continue
        yield _with(d, {rt: (e if rt in family else Effect.NONE) for rt, e in effs.items()})
