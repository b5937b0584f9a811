"""ComfyUI's key plumbing before any layer is built, on tensor names alone.

`comfy/sd.py load_diffusion_model_state_dict` (@783545f6 ~L2284-2292) runs, on the file's
state dict:
1. `comfy/utils.py convert_old_quants(sd, "")`: every header `_quantization_metadata` layer
   entry NAME is written as the key `NAME.comfy_quant` (replacing a tensor marker of that name);
2. `comfy/model_detection.py unet_prefix_from_state_dict(sd)`: the model prefix is the
   candidate (`model.diffusion_model.`, `model.model.`, `net.`) most keys start with, when
   more than 5 do, else `model.` (and `""` for a SAM3 file with `detector.` and `tracker.`
   keys); the keys written in step 1 are counted too;
3. `comfy/utils.py state_dict_prefix_replace(sd, {prefix: ""}, filter_keys=True)`: only the
   keys under the prefix are kept, stripped of it; every other key is dropped;
4. if any key was kept, `convert_old_quants(sd, "")` again with the same metadata: entries
   written without the model prefix now name the stripped layers and mark them.

So a header entry `proj_in` marks the tensors `model.diffusion_model.proj_in.*` (ComfyUI's own
unit test test_two_call_pattern_mirrors_load_diffusion_model_state_dict), but only when more
than 5 keys carry the prefix; and a checkpoint whose tensors carry no prefix while its header
entries do loses every tensor in step 3 (the keys written in step 1 are the only ones kept:
ComfyUI's TestKnownResidualGap). The ComfyUI differential suite runs these functions.
Standard library only (the check path imports it).
"""

from __future__ import annotations

from collections.abc import Iterable

from quantcheck._record import record
from quantcheck.rules.levels import Effect
from quantcheck.runtimes.registry import KeyPlumbing

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.model.checkpoint import Checkpoint

#: unet_prefix_from_state_dict's candidates, in its order (the first wins a tie).
CANDIDATES = ("model.diffusion_model.", "model.model.", "net.")
#: Its answer when no candidate is carried by more than MIN_KEYS keys.
FALLBACK = "model."
MIN_KEYS = 5
MARKER = ".comfy_quant"


@record
class Plumbing:
    """What the key plumbing makes of a checkpoint's names.

    `prefix`: the prefix stripped ("" when none is). `marks`: stored layer prefix -> the header
    entry whose marker ComfyUI ends up with for it, where that entry's name is not the
    layer's own (an exact name match is what every reader does). `dropped`: stored tensor
    names the strip discards."""

    prefix: str
    marks: dict[str, str]
    dropped: tuple[str, ...]


def model_prefix(keys: Iterable[str]) -> str:
    """unet_prefix_from_state_dict on key names."""
    keys = list(keys)
    if any(k.startswith("detector.") for k in keys) and any(k.startswith("tracker.") for k in keys):
        return ""
    counts = dict.fromkeys(CANDIDATES, 0)
    for k in keys:
        if k.startswith(CANDIDATES):  # the common miss is one C-level test
            for c in CANDIDATES:
                if k.startswith(c):
                    counts[c] += 1
                    break
    top = max(counts, key=counts.__getitem__)
    return top if counts[top] > MIN_KEYS else FALLBACK


def plumbing(tensors: Iterable[str], layers: Iterable[str], header: Iterable[str]) -> Plumbing:
    """The plumbing for stored tensor names, the stored layer prefixes that have a weight, and
    the header entries' layer names."""
    names = list(tensors)
    entries = list(header)
    written = {h + MARKER for h in entries}
    prefix = model_prefix([*dict.fromkeys([*names, *written])])
    kept = [n for n in names if n.startswith(prefix)]
    if not kept and not any(w.startswith(prefix) for w in written):
        prefix = ""  # nothing under it: load_diffusion_model_state_dict keeps the dict whole
        kept = names
    dropped = tuple(n for n in names if not n.startswith(prefix))
    entry_set = set(entries)
    marks: dict[str, str] = {}
    for layer in layers:
        if not layer.startswith(prefix):
            continue
        stripped = layer[len(prefix) :]
        if prefix and stripped in entry_set:
            hit = stripped  # the second pass, after the strip
        elif layer in entry_set:
            hit = layer  # the first pass, carried through the strip
        else:
            continue
        if hit != layer:
            marks[layer] = hit
    return Plumbing(prefix, marks, dropped)


def checkpoint_plumbing(ck: Checkpoint) -> Plumbing | None:
    """The key plumbing of `ck` (None when it has no header entry: nothing to re-attach);
    worked out once per checkpoint (the marker rules and ComfyUI's checks both ask)."""
    last = _LAST[0]
    if last is not None and last[0] is ck:
        return last[1]
    header = [p for p, m in ck.markers.items() if any(s.origin == "header" for s in m.sources)]
    hit = None
    if header:
        layers = [p for p, layer in ck.layers.items() if layer.weight is not None]
        hit = plumbing(ck.tensors, layers, header)
    _LAST[0] = (ck, hit)
    return hit


#: (the checkpoint last asked about, its plumbing): one entry, so nothing outlives a run long
_LAST: list[tuple[Checkpoint, Plumbing | None] | None] = [None]


def header_entry(ck: Checkpoint, entry: str, layer: str) -> tuple[Effect, str] | None:
    """What the plumbing makes of the header entry `entry` whose tensors are stored under
    `layer` (its name with a model prefix added or removed; QC222): (Effect.NONE, ...) when the
    second convert_old_quants pass re-attaches it after the strip; (Effect.FAILS, ...) when
    the strip keeps only the header's keys and drops the layer's tensors; None otherwise."""
    plumbed = checkpoint_plumbing(ck)
    if plumbed is None:
        return None
    if plumbed.marks.get(layer) == entry:
        return Effect.NONE, " (ComfyUI re-attaches the entry after stripping the model prefix)"
    if f"{layer}.weight" in plumbed.dropped:
        return Effect.FAILS, (
            f"; ComfyUI writes the entry as {entry}.comfy_quant, takes {plumbed.prefix!r} for "
            "the model prefix and keeps only the keys under it, dropping the layer's tensors "
            "(load_diffusion_model_state_dict: the model has no weights to load)"
        )
    return None


#: ComfyUI's `keys` hook (`Runtime.keys`): the marker rules and the LoRA key map ask it
COMFYUI_KEYS = KeyPlumbing(model_prefix=model_prefix, header_entry=header_entry)
