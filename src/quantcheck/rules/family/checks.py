"""The family contract checks (QC860-QC864, catalog.py): whole-file rules run once.

The checkpoint's family is detected from its logical shapes (`model.family_view`); nothing
runs for an unknown family. Standard library only (the check path imports it).
"""

from __future__ import annotations

from collections import Counter

from quantcheck.diagnostics import Diagnostic, Fix
from quantcheck.families import Detection
from quantcheck.families.detection import (
    config_of,
    keep_list,
    match_topology,
    renamed,
    topology_layers,
)
from quantcheck.model.family_view import (
    QUANTIZED_DTYPES,
    checkpoint_family,
    is_quantized,
    layer_format,
    logical_shapes,
    stored_shapes,
)
from quantcheck.rules import codes as R
from quantcheck.rules.levels import Safety

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.families.detection import QuantizedLayer
    from quantcheck.families.table import Topology
    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.model.layers import Layer
    from quantcheck.rules.rule import Rule

#: Names a finding lists before "and N more".
SHOWN = 6
REQUANT = (
    "requantize from the BF16 model keeping these layers (quantcheck quantize SOURCE --family auto)"
)


def family_findings(ck: Checkpoint, det: Detection | None = None) -> list[Diagnostic]:
    """Every family finding of a checkpoint (none when its family is unknown)."""
    det = det if det is not None else checkpoint_family(ck)
    if det.family is None or det.unsure:
        return []
    official = released_topology(ck, det)
    out = packed_detection(ck, det)
    exempt = frozenset(topology_layers(official)) if official is not None else frozenset()
    out.extend(kept_high_precision(ck, det, exempt))
    out.extend(layout_findings(ck, det))
    topo = topology(ck, det, official)
    if topo is not None:
        out.append(topo)
    return out


def quantized_layers(ck: Checkpoint, det: Detection) -> dict[str, QuantizedLayer]:
    """Every quantized layer of the family's names (prefix stripped, renamed) -> (format,
    convrot, ConvRot group size) from its marker (None where there is no marker)."""
    cut = len(det.prefix)
    fam = det.family
    assert fam is not None
    out: dict[str, QuantizedLayer] = {}
    for prefix, layer in ck.layers.items():
        if not prefix.startswith(det.prefix) or not is_quantized(layer):
            continue
        m = layer.marker
        key = renamed(fam, prefix[cut:])
        if m is None:
            out[key] = (None, None, None)
        else:  # top-level keys only, as the released files have them (and musubi reads them)
            out[key] = (m.format, m.fields.get("convrot"), m.fields.get("convrot_groupsize"))
    return out


def released_topology(ck: Checkpoint, det: Detection) -> Topology | None:
    """The family's released topology (table.Topology) the checkpoint is exactly, if any."""
    fam = det.family
    if fam is None or not fam.topologies:
        return None
    cut = len(det.prefix)
    names = {renamed(fam, n[cut:]) for n in ck.tensors if n.startswith(det.prefix)}
    return match_topology(fam, quantized_layers(ck, det), names)


def _fix(text: str) -> Fix:
    return Fix(text, Safety.DISPLAY)


def _file(ck: Checkpoint, layer: Layer | None = None) -> str | None:
    if layer is not None and layer.weight is not None:
        return layer.weight.file
    return ck.shards[0].name if ck.shards else None


def packed_detection(ck: Checkpoint, det: Detection) -> list[Diagnostic]:
    """QC860: a layer ComfyUI's detection reads, stored with a shape other than its logical
    one in the dimension read."""
    fam = det.family
    assert fam is not None
    stored, logical = stored_shapes(ck), logical_shapes(ck)
    comfy = config_of(fam, stored, det.prefix)
    meant = config_of(fam, logical, det.prefix)
    by_layer: dict[str, list[str]] = {}
    for read in fam.reads:
        key = det.prefix + read.key
        if read.field not in comfy or comfy[read.field] == meant.get(read.field):
            continue
        by_layer.setdefault(key.rpartition(".")[0], []).append(read.field)
    out = []
    for prefix, fields in by_layer.items():
        layer = ck.layers.get(prefix)
        if layer is None or layer.weight is None:
            continue
        w = layer.weight
        computed = ", ".join(f"{f}={comfy[f]}" for f in fields)
        wanted = ", ".join(f"{f}={meant[f]}" for f in fields)
        out.append(
            Diagnostic(
                R.QC860,
                f"ComfyUI's {fam.title} detection reads the stored shape of {w.name} "
                f"({layer_format(layer)}: {w.dtype} {list(w.shape)}, logical "
                f"{list(logical[w.name])}) and computes {computed}; the file means {wanted}",
                file=w.file,
                tensor=w.name,
                layer=prefix,
                fix=_fix(
                    f"keep {prefix} in BF16 or store it FP8/INT8/MXFP8 (logical shape): {REQUANT}"
                ),
                data={
                    "family": fam.name,
                    "comfyui_config": {f: comfy[f] for f in fields},
                    "file_config": {f: meant[f] for f in fields},
                },
            )
        )
    return out


def kept_high_precision(
    ck: Checkpoint, det: Detection, exempt: frozenset[str] = frozenset()
) -> list[Diagnostic]:
    """QC861: a layer the family's producers keep in high precision, stored quantized (not
    one of `exempt`: the layers the released file the checkpoint matches quantizes)."""
    fam = det.family
    assert fam is not None
    out: list[Diagnostic] = []
    cut = len(det.prefix)
    keeps = keep_list(fam, det)
    if not keeps:
        return out
    import re  # loaded already (json imports it)

    any_keep = re.compile("|".join(re.escape(k.pattern) for k in keeps))
    for prefix, layer in ck.layers.items():
        if not prefix.startswith(det.prefix) or any_keep.search(prefix, cut) is None:
            continue
        if not is_quantized(layer):
            continue
        module = prefix[cut:]
        hits = [k for k in keeps if k.pattern in module]
        if not hits or renamed(fam, module) in exempt:
            continue
        producers = ", ".join(dict.fromkeys(p for k in hits for p in k.producers))
        reasons = "; ".join(dict.fromkeys(k.reason for k in hits))
        out.append(
            Diagnostic(
                R.QC861,
                f"{layer.prefix} is {layer_format(layer)}; {fam.title}'s producers keep it in "
                f"high precision: {producers} ({reasons})",
                file=_file(ck, layer),
                layer=layer.prefix,
                fix=_fix(REQUANT),
                data={
                    "family": fam.name,
                    "producers": [p for k in hits for p in k.producers],
                    "patterns": [k.pattern for k in hits],
                },
            )
        )
    return out


def summarize(names: list[str], det: Detection) -> list[str]:
    """Module names for a message: a block missing every module shows as `group.i.*`."""
    if det.layout is None:
        return names
    from quantcheck.families.layouts import LAYOUTS  # only once a family is known

    groups, _ = LAYOUTS[det.layout]
    out: list[str] = []
    whole: set[tuple[str, str]] = set()
    counts: Counter[tuple[str, str]] = Counter()
    for n in names:
        for g, _, every, _ in groups:
            head = g + "."
            if n.startswith(head):
                index = n[len(head) :].partition(".")[0]
                counts[(g, index)] += 1
                if counts[(g, index)] == len(every):
                    whole.add((g, index))
                break
    done: set[tuple[str, str]] = set()
    for n in names:
        key = next(
            (
                (g, n[len(g) + 1 :].partition(".")[0])
                for g, _, _, _ in groups
                if n.startswith(g + ".")
            ),
            None,
        )
        if key is not None and key in whole:
            if key not in done:
                done.add(key)
                out.append(f"{key[0]}.{key[1]}.*")
            continue
        out.append(n)
    return out


def _modules(n: int) -> str:
    return f"{n} module{'' if n == 1 else 's'}"


def ranges(indices: list[int]) -> str:
    """`0, 2-4, 7` for sorted block indices."""
    out: list[str] = []
    last = -2
    for i in indices:
        if out and i == last + 1:
            start = out[-1].split("-")[0]
            out[-1] = f"{start}-{i}"
        else:
            out.append(str(i))
        last = i
    return ", ".join(out)


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    more = len(names) - SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def _layout_rules() -> tuple[tuple[Rule, str, str, str], ...]:
    """QC862 / QC863: (rule, the Detection field, the message's middle, the fix); a function,
    so that importing this module loads no catalog."""
    return (
        (R.QC862, "missing", "{n} of {title}'s layout ({layout}) {be} missing", "re-export the "
         "model or add the missing shard"),
        (R.QC863, "extra", "{n} {be} not in {title}'s layout ({layout})", "remove the stray "
         "tensors or the wrong shard"),
    )  # fmt: skip


def layout_findings(ck: Checkpoint, det: Detection) -> list[Diagnostic]:
    """QC862 / QC863: modules missing from, or extra to, the family's closest layout."""
    fam = det.family
    assert fam is not None
    out = []
    for rule, field, text, fix in _layout_rules():
        names: list[str] = getattr(det, field)
        if not names:
            continue
        what = text.format(
            n=_modules(len(names)),
            title=fam.title,
            layout=det.layout,
            be="is" if len(names) == 1 else "are",
        )
        out.append(
            Diagnostic(
                rule,
                f"{what}: {_listed(summarize(names, det))}",
                file=_file(ck),
                fix=_fix(fix),
                data={"family": fam.name, "layout": det.layout, field: names},
            )
        )
    return out


def _edges(kept: set[int], count: int) -> bool:
    """Whether the kept blocks are the first k and last j blocks (k, j >= 1)."""
    if not kept or len(kept) >= count:
        return False
    head = 0
    while head in kept:
        head += 1
    tail = count - 1
    while tail in kept:
        tail -= 1
    return head > 0 and tail < count - 1 and len(kept) == head + (count - 1 - tail)


def topology(ck: Checkpoint, det: Detection, official: Topology | None = None) -> Diagnostic | None:
    """QC864: how the family's block linears are quantized, in one line, naming the released
    topology (`official`, `released_topology`) the file is exactly."""
    fam = det.family
    assert fam is not None
    total = quantized = 0
    kept_dtypes: Counter[str] = Counter()
    blocks: dict[tuple[str, int], list[bool]] = {}
    counts: dict[str, int] = {}
    heads = [(det.prefix + g + ".", g) for g, _ in sorted(fam.blocks, key=lambda b: -len(b[0]))]
    for prefix, layer in ck.layers.items():
        w = layer.tensors.get("weight")
        if w is None or len(w[2]) != 2:
            continue
        hit = next((h for h in heads if prefix.startswith(h[0])), None)
        if hit is None:
            continue
        head, g = hit
        index = prefix[len(head) :].partition(".")[0]
        if not index.isdigit():
            continue
        q = layer.marker is not None or w[1] in QUANTIZED_DTYPES
        total += 1
        quantized += q
        if not q:
            kept_dtypes[w[1]] += 1
        i = int(index)
        blocks.setdefault((g, i), []).append(q)
        if i >= counts.get(g, 0):
            counts[g] = i + 1
    if total == 0 or quantized == 0:
        return None
    kept = total - quantized
    line = f"{quantized}/{total} block linears quantized"
    whole = {g: {i for (gg, i), qs in blocks.items() if gg == g and not any(qs)} for g in counts}
    recipe, named = "all", "every block linear quantized"
    if kept:
        dtype = kept_dtypes.most_common(1)[0][0]
        kept_blocks = [f"{g} {ranges(sorted(s))}" for g, s in whole.items() if s]
        if kept_blocks and all(_edges(s, counts[g]) or not s for g, s in whole.items()):
            recipe, named = "skip edges", 'the "skip edges" recipe'
            line += f"; {kept} kept {dtype} (first and last blocks: {'; '.join(kept_blocks)})"
        else:
            recipe, named = "mixed", "a mixed recipe"
            where = f"whole blocks: {'; '.join(kept_blocks)}" if kept_blocks else "within blocks"
            line += f"; {kept} kept {dtype} ({where})"
    if official is not None:
        recipe = official.name
        named = f"{official.title} ({official.layers} layers, {official.checked_by})"
    line += f": {named}"
    return Diagnostic(
        R.QC864,
        f"{fam.title}: {line}",
        file=_file(ck),
        data={
            "family": fam.name,
            "block_linears": total,
            "quantized": quantized,
            "recipe": recipe,
            "kept_blocks": {g: sorted(s) for g, s in whole.items() if s},
        },
    )
