"""Which layers `quantize` converts, and whether a format can take a layer's shape per runtime
and release (a target key: `sglang`, `sglang@0.5.19`; the release data says what a release cannot
load and which marker fields it needs: `Release.quantize`, `Release.marker_fields`).

Standard library only. Defaults: only 2-D `<layer>.weight` tensors in F32/F16/BF16 whose layer
name does not read as a norm or an embedding; biases and 1-D tensors are never quantized.
`--include` / `--exclude` globs match the layer prefix (`blocks.*.attn.*`) or the weight name.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from quantcheck.formats.table import quantize_refusal
from quantcheck.runtimes import load, split_target, targets_of

FLOAT_WEIGHTS = frozenset({"F32", "F16", "BF16"})
SKIP_WORDS = ("norm", "embed", "wte", "tok_emb", "token_emb", "pos_emb", "ln_")


def matches(prefix: str, patterns: list[str]) -> bool:
    return any(
        fnmatch.fnmatchcase(prefix, p) or fnmatch.fnmatchcase(prefix + ".weight", p)
        for p in patterns
    )


def skip_reason(
    prefix: str, dtype: str, shape: tuple[int, ...], include: list[str], exclude: list[str]
) -> str | None:
    """Why the weight `<prefix>.weight` is left alone by default (None: quantize it)."""
    if include and not matches(prefix, include):
        return "not matched by --include"
    if exclude and matches(prefix, exclude):
        return "matched by --exclude"
    if dtype not in FLOAT_WEIGHTS:
        return f"weight is {dtype}, not F32/F16/BF16"
    if len(shape) != 2:
        return f"weight is {len(shape)}-D; only 2-D Linear weights are quantized"
    if not include:
        low = prefix.lower()
        word = next((w for w in SKIP_WORDS if w in low), None)
        if word:
            return f"name contains {word!r} (norms and embeddings stay unquantized)"
    return None


def format_refusal(fmt: str, options: dict[str, Any], target: str) -> str | None:
    """Why `fmt` with `options` can never load on `target` (any shape); None if it can."""
    return _runtime_refusal(fmt, options, 0, 0, target)


def shape_refusal(fmt: str, n: int, k: int, options: dict[str, Any], target: str) -> str | None:
    """Why `fmt` cannot take an [n, k] weight on `target`; None if it can: the format table's
    constraints first, then the runtime's own limits."""
    why = quantize_refusal(fmt, n, k, options)
    if why:
        return why
    return _runtime_refusal(fmt, options, n, k, target)


def _runtime_refusal(fmt: str, options: dict[str, Any], n: int, k: int, target: str) -> str | None:
    """The release's refusal of the format (its release data), then the runtime's own (its
    record's `quantize_refusal` hook); n = k = 0: any shape."""
    rt, release = split_target(target)
    if not n:
        why = rt.quantize_table(release).get(fmt)
        if why:
            return why
    ref = rt.quantize_refusal
    return load(ref)(fmt, options, n, k) if ref else None


def marker_fields(fmt: str, target: str) -> dict[str, Any]:
    """Marker fields the releases `target` names need on `fmt` layers beyond what the
    quantizer writes (sglang 0.5.19: `full_precision_matrix_mult` on NVFP4)."""
    out: dict[str, Any] = {}
    for key in targets_of(target):
        rt, release = split_target(key)
        out.update(rt.marker_table(release).get(fmt, {}))
    return out


def header_declared(fmt: str, target: str) -> bool:
    """Whether `quantize` also declares `fmt` layers in the header for `target`: a runtime it
    names loads them through a loader that reads only the header (`Runtime.header_formats`)."""
    return any(fmt in split_target(key)[0].header_formats for key in targets_of(target))
