"""The model family's contract (QC860-QC864): one failing case and its passing twin each.

Every file is a header-only stand-in of FLUX.2 klein-4b (tests/data/families/, built from
ComfyUI's own model class; tests/families/standin.py writes it sparse). Behaviour per rule:
src/quantcheck/rules/family/catalog.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.families import standin as S

from .._case import RuleCase, eff

MODEL = "flux2-klein-4b"


def _klein(
    edit: Callable[[S.Tensors], S.Tensors] = lambda t: t, name: str = "klein.safetensors"
) -> Callable[[Path], list[Path]]:
    def build(tmp: Path) -> list[Path]:
        return [S.write(tmp / name, edit(S.bf16(S.shapes(MODEL))))]

    return build


def _only(fmt: str, *weights: str) -> Callable[[S.Tensors], S.Tensors]:
    return lambda t: S.quantize(t, fmt, lambda n, _s: n in weights)


def _blocks_but_edges(t: S.Tensors) -> S.Tensors:
    edges = ("double_blocks.0.", "double_blocks.4.", "single_blocks.0.", "single_blocks.19.")
    return S.quantize(
        t, "float8_e4m3fn", lambda n, _s: "blocks." in n and not any(e in n for e in edges)
    )


def _quantized(t: S.Tensors) -> S.Tensors:
    """One block's linears in FP8: a quantized checkpoint (a BF16 one is not checked)."""
    return S.quantize(t, "float8_e4m3fn", lambda n, _s: n.startswith("double_blocks.1."))


def _truncated(t: S.Tensors) -> S.Tensors:
    return S.drop(_quantized(t), ["double_blocks.3.img_mlp.0."])


def _extra(t: S.Tensors) -> S.Tensors:
    extra = {"double_blocks.0.img_attn.extra_proj.weight": ("BF16", (64, 64), None)}
    return {**_quantized(t), **extra}


CASES = [
    RuleCase(
        "QC860",
        "nvfp4-img_in-packs-in-channels",
        _klein(_only("nvfp4", "img_in.weight")),
        eff("none", "fails"),
        twin=_klein(_only("float8_e4m3fn", "img_in.weight")),
        twin_allows=("QC861",),  # img_in is on convert_to_quant's --flux2 list
        message="computes in_channels=64; the file means in_channels=128",
    ),
    RuleCase(
        "QC861",
        "flux2-final-layer-quantized",
        _klein(_only("float8_e4m3fn", "final_layer.linear.weight")),
        eff("degraded", "degraded"),
        twin=_klein(_only("float8_e4m3fn", "double_blocks.0.img_attn.qkv.weight")),
        twin_allows=("QC864",),
        message="convert_to_quant --flux2",
    ),
    RuleCase(
        "QC862",
        "truncated-block",
        _klein(_truncated),
        eff("fails", "fails"),
        twin=_klein(_quantized),
        twin_allows=("QC864",),
        message="double_blocks.3.img_mlp.0",
    ),
    RuleCase(
        "QC863",
        "stray-module",
        _klein(_extra),
        eff("degraded", "degraded"),
        twin=_klein(_quantized),
        twin_allows=("QC864",),
        message="double_blocks.0.img_attn.extra_proj",
    ),
    RuleCase(
        "QC864",
        "skip-edges-topology",
        _klein(_blocks_but_edges),
        eff("none", "none"),
        twin=_klein(),
        message='the "skip edges" recipe',
    ),
]
