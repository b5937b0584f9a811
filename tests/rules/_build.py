"""Small safetensors builders for the rule tables (standard library + `quantcheck.io.build`).

Valid layers are written the way `examples/make_examples.py` writes them: real dtypes and
shapes, deterministic non-NaN bytes. `raw_file` writes any header bytes verbatim (struct.pack),
for the QC1xx container cases.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors
from quantcheck.io.dtypes import DTYPES

Build = Callable[[Path], list[Path]]
P = "blocks.0.attn.qkv"  # a linear layer name (not an embedding)


def nbytes(dtype: str, shape: Iterable[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return (n * DTYPES[dtype].bits + 7) // 8


def t(name: str, dtype: str, shape: tuple[int, ...], fill: int | None = None) -> RawTensor:
    """A tensor with deterministic bytes; 1-byte floats avoid the NaN codes 0x7F/0xFF."""
    n = nbytes(dtype, shape)
    data = bytes([fill]) * n if fill is not None else bytes((i * 37 + 11) & 0x7E for i in range(n))
    return RawTensor(name, dtype, tuple(shape), data)


def marker(prefix: str, conf: Any, dtype: str = "U8", raw: bytes | None = None) -> RawTensor:
    """`<prefix>.comfy_quant`: ComfyUI's encoding, or the given raw bytes/dtype."""
    if raw is None and dtype == "U8" and isinstance(conf, dict):
        return marker_tensor(prefix, conf)
    data = raw if raw is not None else json.dumps(conf).encode()
    width = DTYPES[dtype].bits // 8 or 1
    data += b" " * (-len(data) % width)
    return RawTensor(f"{prefix}.comfy_quant", dtype, (len(data) // width,), data)


# --- one valid layer per format (the passing twins) ------------------------------------------


def fp8(
    p: str = P,
    n: int = 64,
    k: int = 64,
    *,
    mark: dict | None = None,
    scale: tuple[str, tuple[int, ...]] = ("F32", ()),
    weight: str = "F8_E4M3",
    with_scale: bool = True,
) -> list[RawTensor]:
    out = [t(f"{p}.weight", weight, (n, k))]
    if with_scale:
        out.append(t(f"{p}.weight_scale", scale[0], scale[1]))
    out.append(marker(p, mark if mark is not None else {"format": "float8_e4m3fn"}))
    return out


def fp8_with(m: RawTensor) -> Callable[[], list[RawTensor]]:
    """A valid FP8 layer whose marker tensor is replaced by `m`."""
    return lambda: [*fp8()[:-1], m]


INT8_CONVROT = {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 16}


def int8(
    p: str = P,
    n: int = 64,
    k: int = 64,
    *,
    mark: dict | None = None,
    weight: tuple[str, tuple[int, ...]] | None = None,
    scale: tuple[str, tuple[int, ...]] | None = None,
) -> list[RawTensor]:
    w = weight or ("I8", (n, k))
    s = scale or ("F32", (n, 1))
    return [
        t(f"{p}.weight", *w),
        t(f"{p}.weight_scale", *s),
        marker(p, mark if mark is not None else INT8_CONVROT),
    ]


def nvfp4(
    p: str = P,
    n: int = 128,
    k: int = 64,
    *,
    mark: dict | None = None,
    weight: str = "U8",
    scale_shape: tuple[int, int] | None = None,
) -> list[RawTensor]:
    """NVFP4 as comfy-kitchen stores it; aligned (N % 128 == 0, K % 64 == 0) by default."""
    n16, k16 = -(-n // 16) * 16, -(-k // 16) * 16
    ss = scale_shape or (-(-n16 // 128) * 128, -(-(k16 // 16) // 4) * 4)
    return [
        t(f"{p}.weight", weight, (n16, k16 // 2)),
        t(f"{p}.weight_scale", "F8_E4M3", ss),
        t(f"{p}.weight_scale_2", "F32", ()),
        marker(p, mark if mark is not None else {"format": "nvfp4"}),
    ]


def mxfp8(p: str = P, n: int = 128, k: int = 128) -> list[RawTensor]:
    return [
        t(f"{p}.weight", "F8_E4M3", (n, k)),
        t(f"{p}.weight_scale", "U8", (n, k // 32)),
        marker(p, {"format": "mxfp8"}),
    ]


W4A8 = {"format": "asym_w4a8_int8", "group_size": 16, "convrot_groupsize": 16, "convrot": True}


def w4a8(
    p: str = P,
    n: int = 32,
    k: int = 64,
    *,
    g: int = 16,
    mark: dict | None = None,
    channel: str = "F32",
    correction: str | None = None,
    bits: int = 4,
    codebook: bool = True,
) -> list[RawTensor]:
    cols = k * bits // 8
    out = [
        t(f"{p}.weight", "I8", (n, cols)),
        t(f"{p}.weight_s_rel", "F8_E4M3", (n, k // g)),
        t(f"{p}.weight_s_channel", channel, (n,)),
    ]
    if codebook:
        out.append(t(f"{p}.weight_codebook", "F32", (16,)))
    if correction:
        out.append(t(f"{p}.weight_correction", correction, (k // g, n)))
    out.append(marker(p, mark if mark is not None else {**W4A8, "group_size": g}))
    return out


W6A8 = {"format": "w6a8_int8", "group_size": 32, "convrot_groupsize": 16, "convrot": True}


def w6a8(
    p: str = P,
    n: int = 32,
    k: int = 64,
    *,
    g: int = 32,
    mark: dict | None = None,
    channel: str = "F32",
    cols: int | None = None,
) -> list[RawTensor]:
    """A w6a8_int8 layer: I8 [N, 3K/4] (or `cols`), F8 s_rel [N, K/g], s_channel [N]."""
    return [
        t(f"{p}.weight", "I8", (n, 3 * k // 4 if cols is None else cols)),
        t(f"{p}.weight_s_rel", "F8_E4M3", (n, k // g)),
        t(f"{p}.weight_s_channel", channel, (n,)),
        marker(p, mark if mark is not None else {**W6A8, "group_size": g}),
    ]


def w4a4(p: str = P, n: int = 32, k: int = 64, *, mark: dict | None = None) -> list[RawTensor]:
    return [
        t(f"{p}.weight", "I8", (n, k // 2)),
        t(f"{p}.weight_scale", "F32", (n,)),
        marker(
            p, mark if mark is not None else {"format": "convrot_w4a4", "convrot_groupsize": 16}
        ),
    ]


def awq(p: str = P, n: int = 32, k: int = 128, g: int = 64) -> list[RawTensor]:
    return [
        t(f"{p}.weight", "I8", (n, k // 2)),
        t(f"{p}.weight_scale", "BF16", (k // g, n)),
        t(f"{p}.weight_zeros", "BF16", (k // g, n)),
        marker(p, {"format": "awq_w4a16", "group_size": g}),
    ]


def bf16(p: str, n: int = 64, k: int = 64) -> list[RawTensor]:
    return [t(f"{p}.weight", "BF16", (n, k))]


# --- build functions for the tables ----------------------------------------------------------


def file(
    make: Callable[[], list[RawTensor]],
    metadata: dict[str, str] | None = None,
    name: str = "model.safetensors",
) -> Build:
    """A build writing one safetensors file from `make()`."""

    def build(tmp: Path) -> list[Path]:
        path = tmp / name
        write_safetensors(path, make(), metadata)
        return [path]

    return build


def shards(*parts: tuple[Callable[[], list[RawTensor]], dict[str, str] | None]) -> Build:
    """Several shards of one checkpoint, checked together in this order."""

    def build(tmp: Path) -> list[Path]:
        out = []
        for i, (make, meta) in enumerate(parts, 1):
            path = tmp / f"model-{i:05d}-of-{len(parts):05d}.safetensors"
            write_safetensors(path, make(), meta)
            out.append(path)
        return out

    return build


def header_meta(layers: dict[str, Any]) -> dict[str, str]:
    """`__metadata__` carrying ComfyUI's `_quantization_metadata` header markers."""
    return {"_quantization_metadata": json.dumps({"format_version": "1.0", "layers": layers})}


def raw_bytes(data: bytes, name: str = "model.safetensors") -> Build:
    def build(tmp: Path) -> list[Path]:
        path = tmp / name
        path.write_bytes(data)
        return [path]

    return build


def raw_file(
    header: str | bytes | dict, data: bytes = b"", *, length: int | None = None, pad: bool = True
) -> Build:
    """`<u64 length><header><data>` verbatim; `length` lies about the header length."""
    if isinstance(header, dict):
        header = json.dumps(header, separators=(",", ":"))
    text = header.encode() if isinstance(header, str) else header
    if pad:
        text += b" " * (-len(text) % 8)
    n = len(text) if length is None else length
    return raw_bytes(struct.pack("<Q", n) + text + data)


def entry(dtype: str, shape: list[Any], begin: int, end: int) -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def index(
    weight_map: dict[str, str],
    files: dict[str, Callable[[], list[RawTensor]]],
    doc: Any = None,
    folder: str = "ckpt",
) -> Build:
    """A `model.safetensors.index.json` (in `folder`) plus the named shard files."""

    def build(tmp: Path) -> list[Path]:
        base = tmp / folder
        base.mkdir(parents=True, exist_ok=True)
        for name, make in files.items():
            write_safetensors(base / name, make())
        idx = base / "model.safetensors.index.json"
        idx.write_text(
            json.dumps(doc if doc is not None else {"metadata": {}, "weight_map": weight_map})
        )
        return [idx]

    return build


# --- sglang 0.5.23's rowwise FP8 header format (header-only: no comfy_quant markers) ---------

ROWWISE = "rowwise-float8_e4m3fn"
ROWWISE_DESC = {ROWWISE: {"scale_recipe": "rowwise"}}
ROWWISE_BF16_LAYER = "blocks.0.mlp.fc1"


def rowwise(
    *,
    version: str = "1.1",
    scale: tuple[str, tuple[int, ...]] = ("F32", (64,)),
    quant_configs: Any = ROWWISE_DESC,
    other: dict[str, Any] | None = None,
    bf16_scale: bool = False,
) -> Build:
    """A rowwise FP8 file: one rowwise layer (F8_E4M3 [64, 64], its scale) and one bf16 layer."""
    layers = {P: {"format": ROWWISE}, ROWWISE_BF16_LAYER: {"format": "bf16"}, **(other or {})}
    doc: dict[str, Any] = {"format_version": version, "layers": layers}
    if quant_configs is not None:
        doc["quant_configs"] = quant_configs

    def make() -> list[Any]:
        out = [
            t(f"{P}.weight", "F8_E4M3", (64, 64)),
            t(f"{P}.weight_scale", *scale),
            t("blocks.0.mlp.fc1.weight", "BF16", (64, 64)),
        ]
        if bf16_scale:
            out.append(t("blocks.0.mlp.fc1.weight_scale", "F32", (64,)))
        return out

    return file(make, {"_quantization_metadata": json.dumps(doc)})
