"""A realistic-size mixed-format checkpoint, written sparse (header and markers real, weights
holes): 60 blocks × 14 linears + 4 norms, NVFP4 with BF16 fallbacks, FP8 modulation, MXFP8 in
a few blocks, and two broken layers. About 3,600 tensors; writes in well under a second."""

from __future__ import annotations

import json
import struct
from pathlib import Path

LINEARS = (
    "attn.to_q",
    "attn.to_k",
    "attn.to_v",
    "attn.add_q_proj",
    "attn.add_k_proj",
    "attn.add_v_proj",
    "attn.to_out.0",
    "attn.to_add_out",
    "img_mlp.net.0.proj",
    "img_mlp.net.2",
    "txt_mlp.net.0.proj",
    "txt_mlp.net.2",
    "img_mod.1",
    "txt_mod.1",
)
NORMS = ("attn.norm_q", "attn.norm_k", "attn.norm_added_q", "attn.norm_added_k")
SIZES = {"F32": 4, "BF16": 2, "F16": 2, "F8_E4M3": 1, "U8": 1, "I8": 1}


def _shape(kind: str, h: int) -> tuple[int, int]:
    if "mod" in kind:
        return 6 * h, h
    if "net.0" in kind:
        return 4 * h, h
    if "net.2" in kind:
        return h, 4 * h
    return h, h


def _fmt(block: int, kind: str, blocks: int) -> str | None:
    if block in (0, blocks - 1):
        return None
    if "mod" in kind:
        return "float8_e4m3fn"
    if 20 <= block < 26 and "to_out" in kind:
        return "mxfp8"
    return "nvfp4"


Spec = tuple[str, str, list[int], bytes | None]


def _layer(p: str, fmt: str | None, n: int, k: int) -> list[Spec]:
    up = lambda x, m: -(-x // m) * m  # noqa: E731
    marker = json.dumps({"format": fmt}).encode() if fmt else b""
    if fmt is None:
        out = [(f"{p}.weight", "BF16", [n, k], None)]
    elif fmt == "nvfp4":
        out = [
            (f"{p}.weight", "U8", [n, k // 2], None),
            (f"{p}.weight_scale", "F8_E4M3", [up(n, 128), up(k // 16, 4)], None),
            (f"{p}.weight_scale_2", "F32", [], None),
        ]
    elif fmt == "mxfp8":
        out = [
            (f"{p}.weight", "F8_E4M3", [n, k], None),
            (f"{p}.weight_scale", "U8", [up(n, 128), up(k // 32, 4)], None),
        ]
    else:
        out = [(f"{p}.weight", "F8_E4M3", [n, k], None), (f"{p}.weight_scale", "F32", [], None)]
    if fmt:
        out.append((f"{p}.comfy_quant", "U8", [len(marker)], marker))
    return [*out, (f"{p}.bias", "BF16", [n], None)]


def make_big(path: Path, blocks: int = 60, hidden: int = 3072) -> Path:
    """Write the checkpoint to `path` (sparse) and return it."""
    specs: list[Spec] = []
    for b in range(blocks):
        base = f"model.diffusion_model.transformer_blocks.{b}"
        for kind in LINEARS:
            n, k = _shape(kind, hidden)
            layer = _layer(f"{base}.{kind}", _fmt(b, kind, blocks), n, k)
            if b == 33 and kind == "attn.to_k":  # broken: scale_2 stored as BF16
                layer[2] = (layer[2][0], "BF16", [], None)
            if b == 41 and kind == "txt_mlp.net.2":  # broken: marker on a BF16 weight
                layer[0] = (layer[0][0], "BF16", [n, k], None)
            specs += layer
        specs += [(f"{base}.{m}.weight", "BF16", [128], None) for m in NORMS]
    specs += [
        ("model.diffusion_model.proj_out.weight", "BF16", [64, hidden], None),
        ("model.diffusion_model.img_in.weight", "BF16", [hidden, 64], None),
    ]
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, dt, shape, payload in specs:
        nb = len(payload) if payload is not None else SIZES[dt] * _prod(shape)
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nb]}
        off += nb
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        base = f.tell()
        for name, _, _, payload in specs:
            if payload is not None:
                f.seek(base + header[name]["data_offsets"][0])  # type: ignore[index]
                f.write(payload)
        f.truncate(base + off)
    return path


def _prod(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
