"""A LoRA (or several) on a base checkpoint, as ComfyUI loads and patches it.

Header-only part (standard library): key map, load_lora, conventions, unmatched keys with
reasons, shape checks against the layers' logical [N, K], the per-layer outcome and the patch
tensors' memory. Numbers (`numbers=True`, numpy imported on demand): per patched quantized
layer, ComfyUI's re-quantization of W + s·ΔW with quantcheck's codecs (`numeric/lora_patch`),
within `max_bytes` of reads; beyond it (or for a layer that cannot be read) an estimate from
the stored scales (`estimate.py`).
"""

from __future__ import annotations

from quantcheck._record import factory, record
from quantcheck.formats.dims import derive_dims
from quantcheck.formats.table import FORMATS
from quantcheck.rules.lora.conventions import Explainer, describe, is_text_encoder, split_key
from quantcheck.rules.lora.keymap import KeyMap, build_key_map
from quantcheck.rules.lora.load import Patch, load_lora, patch_shape
from quantcheck.rules.lora.runtimes import fill_outcomes, lora_runtimes
from quantcheck.runtimes.comfyui_lora import FULL_LOAD, ON_THE_FLY_REQUANT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.model.layers import Layer


@record
class LoraFile:
    """One LoRA file: its counts, conventions and the keys ComfyUI does not load."""

    path: str
    name: str
    tensors: int
    matched_tensors: int
    unmatched: list[dict[str, Any]] = factory(list)
    unpredicted: list[dict[str, Any]] = factory(list)
    text_encoder: list[str] = factory(list)
    #: every key load_lora with this base's key map alone logs as not loaded (file order;
    #: text-encoder keys included, unpredicted ones not)
    not_loaded: list[str] = factory(list)
    conventions: dict[str, Any] = factory(dict)
    conversion: str = ""


@record
class LayerResult:
    """One patched model key: what ComfyUI does with it and what arrives."""

    target: str
    layer: str
    format: str
    quantized: bool
    shape: tuple[int, int] | None
    outcome: str
    on_the_fly: str
    patch_bytes: int
    loras: list[str] = factory(list)
    problem: str | None = None
    figures: dict[str, Any] | None = None
    #: "measured" (weights read), "estimated" (stored scales), "" (no figures)
    basis: str = ""
    #: other runtime -> {"outcome", and its figures when known} (`rules/lora/runtimes.py`)
    runtimes: dict[str, dict[str, Any]] = factory(dict)
    #: the row ranges (start, size) patches of slices cover (a fused weight's q/k/v parts)
    slices: list[tuple[int, int]] = factory(list)


@record
class Analysis:
    """Everything `quantcheck lora` reports (the diagnostics come from `checks.findings`)."""

    base: str
    family: str
    strength: float
    files: list[LoraFile]
    layers: list[LayerResult]
    keymap_entries: int
    numbers: str = "none"
    bytes_read: int = 0
    #: the target runtimes other than ComfyUI whose LoRA path is modelled
    runtimes: list[str] = factory(list)


def logical_shape(layer: Layer | None, fmt: str) -> tuple[int, int] | None:
    """The layer's logical [N, K] as ComfyUI compares it (orig_shape of a packed layer)."""
    if layer is None or layer.weight is None:
        return None
    spec = FORMATS.get(fmt)
    if spec is not None:
        dims = derive_dims(spec, layer)
        return (dims.N, dims.K) if dims is not None else None
    shape = layer.weight.shape
    if len(shape) < 2:
        return None
    k = 1
    for s in shape[1:]:
        k *= s
    return shape[0], k


def _flat(shape: tuple[int, ...]) -> tuple[int, int]:
    k = 1
    for s in shape[1:]:
        k *= s
    return (shape[0] if shape else 0), k


def shape_problem(
    patch: Patch, shapes: dict[str, tuple[int, ...]], nk: tuple[int, int] | None
) -> str | None:
    """Why ComfyUI's calculate_weight cannot apply `patch` to a layer (or slice) of logical
    `nk` (a patch that reshapes the weight, BFL control's img_in, fits by construction)."""
    if nk is None or "reshape" in patch.parts:
        return None
    n, k = nk
    got = {role: shapes.get(name) for role, name in patch.parts.items()}
    missing = [r for r in ("up", "down") if patch.kind == "lora" and got.get(r) is None]
    if missing:
        return (
            f"the LoRA has no {' or '.join(missing)} tensor for this module "
            "(load_lora raises KeyError)"
        )
    if patch.kind == "lora":
        (un, ur), (dr, dk) = _flat(got["up"] or ()), _flat(got["down"] or ())
        if ur != dr:
            return f"up {got['up']} and down {got['down']} disagree on the rank ({ur} != {dr})"
        if (un, dk) != (n, k):
            where = "silently reshaped" if un * dk == n * k else "not applied"
            return f"up @ down is [{un}, {dk}], the layer's logical shape is [{n}, {k}] ({where})"
    elif patch.kind == "loha":
        a, b = _flat(got.get("w1_a") or ()), _flat(got.get("w1_b") or ())
        if (a[0], b[1]) != (n, k):
            return f"w1_a @ w1_b is [{a[0]}, {b[1]}], the layer's logical shape is [{n}, {k}]"
    elif patch.kind == "lokr":
        dims = []
        for w in ("w1", "w2"):
            if got.get(w) is not None:
                dims.append(_flat(got[w] or ()))
            elif got.get(w + "_a") is not None and got.get(w + "_b") is not None:
                dims.append((_flat(got[w + "_a"] or ())[0], _flat(got[w + "_b"] or ())[1]))
        if len(dims) == 2:
            rows, cols = dims[0][0] * dims[1][0], dims[0][1] * dims[1][1]
            if rows * cols != n * k:
                return f"kron(w1, w2) is [{rows}, {cols}], the layer's logical shape is [{n}, {k}]"
    elif patch.kind == "diff" and patch.target.endswith(".weight"):
        d = got.get("diff")
        if d is not None and _flat(d) != (n, k):
            return f"diff {d} is not the layer's logical shape [{n}, {k}] (not merged)"
    return None


def _layer_format(layer: Layer | None) -> tuple[str, bool]:
    if layer is None or layer.weight is None:
        return "?", False
    fmt = layer.format
    if isinstance(fmt, str) and fmt:
        return fmt, True
    return layer.weight.dtype, False


def header_analysis(
    base: Checkpoint,
    loras: list[Checkpoint],
    strength: float = 1.0,
    family: str | None = None,
    runtimes: Iterable[str] = (),
) -> tuple[Analysis, KeyMap, list[list[tuple[Checkpoint, Patch]]]]:
    """Everything the headers answer: the analysis without figures, the key map and the
    patches per layer (in the order of `Analysis.layers`); `runtimes`: target keys whose
    runtimes' LoRA paths are judged beside ComfyUI's."""
    km = build_key_map(base.tensors, family, {n: t.shape for n, t in base.tensors.items()})
    files: list[LoraFile] = []
    by_target: dict[str, list[tuple[Checkpoint, Patch]]] = {}
    for ck in loras:
        shapes = {n: t.shape for n, t in ck.tensors.items()}
        loaded = load_lora(shapes, km.entries)
        conv = describe(ck.tensors, ck.metadata)
        made_for = conv["made_for"] if isinstance(conv["made_for"], str) else None
        explain = Explainer(km, made_for)
        name = ck.shards[0].name if ck.shards else (ck.inputs[0] if ck.inputs else "?")
        f = LoraFile(name, _base_name(name), len(ck.tensors), len(ck.tensors), conventions=conv)
        f.conversion = loaded.conversion
        for key in loaded.unmatched:
            module, _ = split_key(key)
            if is_text_encoder(module):
                f.text_encoder.append(key)
                f.not_loaded.append(key)
                continue
            why = explain.explain(key)
            entry = {"key": key, **why}
            if why["reason"] == "not-modelled" or "not modelled" in loaded.conversion:
                f.unpredicted.append(entry)
            else:
                f.unmatched.append(entry)
                f.not_loaded.append(key)
        f.matched_tensors = f.tensors - len(loaded.unmatched)
        files.append(f)
        for patch in loaded.patches.values():
            patch.parts = {r: loaded.renamed.get(n, n) for r, n in patch.parts.items()}
            by_target.setdefault(patch.target, []).append((ck, patch))
    layers: list[LayerResult] = []
    patches: list[list[tuple[Checkpoint, Patch]]] = []
    for target, items in by_target.items():
        stored = km.stored.get(target, target)
        prefix = stored[: -len(".weight")] if stored.endswith(".weight") else stored
        layer = base.layers.get(prefix) if stored.endswith(".weight") else None
        fmt, quantized = _layer_format(layer)
        nk = logical_shape(layer, fmt) if layer is not None else None
        problem = None
        nbytes = 0
        for ck, patch in items:
            named = {n: ck.tensors[n].shape for n in patch.parts.values() if n in ck.tensors}
            problem = problem or shape_problem(patch, named, patch_shape(patch, nk))
            nbytes += sum(ck.tensors[n].nbytes for n in patch.parts.values() if n in ck.tensors)
        outcome = FULL_LOAD.get(fmt, "patched") if quantized else "patched"
        if quantized:
            fly = "requantized" if fmt in ON_THE_FLY_REQUANT else "dequantized"
        else:
            fly = "patched"
        result = LayerResult(
            target, prefix, fmt, quantized, nk, outcome, fly, nbytes, problem=problem
        )
        result.loras = [_base_name(ck.shards[0].name) for ck, _ in items if ck.shards]
        result.slices = sorted(
            (p.offset[1], p.offset[2]) for _, p in items if p.offset and p.offset[0] == 0
        )
        layers.append(result)
        patches.append(items)
    base_name = base.shards[0].name if base.shards else "?"
    analysis = Analysis(base_name, km.family, strength, files, layers, len(km.entries))
    analysis.runtimes = lora_runtimes(runtimes)
    fill_outcomes(analysis)
    return analysis, km, patches


def _base_name(path: str) -> str:
    from quantcheck.io.source import base_name

    return base_name(path)


def analyse(
    base: Checkpoint,
    loras: list[Checkpoint],
    strength: float = 1.0,
    *,
    numbers: bool = False,
    max_bytes: int | None = None,
    family: str | None = None,
    runtimes: Iterable[str] = (),
) -> Analysis:
    """The whole analysis (`numbers`: also what the patch does to each layer's numbers;
    `runtimes`: target keys, see `header_analysis`)."""
    analysis, _, patches = header_analysis(base, loras, strength, family, runtimes)
    if numbers:
        from quantcheck.rules.lora.figures import add_figures

        add_figures(analysis, base, patches, max_bytes)
    return analysis
