"""Header-only stand-ins of real models: the key and shape lists of tests/data/families/
(built from ComfyUI's own model classes, tools/family_keys.py) written as sparse safetensors
files, BF16 or quantized with a format, without allocating their weights.

Only the `.comfy_quant` markers carry bytes; every other tensor's data is the zero-filled
hole of a sparse file, so a 32B-parameter layout costs a header on disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from quantcheck.families.table import Topology
from quantcheck.formats.table import FORMATS, quantize_refusal

DATA = Path(__file__).resolve().parents[1] / "data" / "families"
ITEMSIZE = {"BF16": 2, "F16": 2, "F32": 4, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1}
#: name -> (dtype, shape, bytes or None)
Tensors = dict[str, tuple[str, tuple[int, ...], bytes | None]]


def names() -> list[str]:
    return sorted(p.stem for p in DATA.glob("*.json"))


def load(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


def shapes(name: str) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v) for k, v in load(name)["tensors"].items()}


def bf16(shape_map: dict[str, tuple[int, ...]], prefix: str = "") -> Tensors:
    return {prefix + k: ("BF16", s, None) for k, s in shape_map.items()}


def default_options(fmt: str) -> dict[str, Any]:
    return {o.name: o.default for o in FORMATS[fmt].options}


def quantizable(
    name: str, shape: tuple[int, ...], fmt: str, options: dict[str, Any] | None = None
) -> bool:
    """A 2-D weight the format can take (what a producer quantizing 'everything' would)."""
    return (
        name.endswith(".weight")
        and len(shape) == 2
        and min(shape) >= 16
        and quantize_refusal(fmt, shape[0], shape[1], options or default_options(fmt)) is None
        and (fmt != "awq_w4a16" or shape[1] % AWQ_GROUP == 0)
    )


#: AWQ has no quantizer (FormatSpec.written is None): its stored layout, as the layer rules
#: want it (tests/rules/_build.py awq), group 64.
AWQ_GROUP = 64


def _awq_written(n: int, k: int, opts: dict[str, Any], dtype: str) -> Any:
    g = AWQ_GROUP
    layout = {
        "weight": ("I8", (n, k // 2)),
        "weight_scale": ("BF16", (k // g, n)),
        "weight_zeros": ("BF16", (k // g, n)),
    }
    return layout, {"group_size": g}


def written(fmt: str) -> Any:
    return _awq_written if fmt == "awq_w4a16" else FORMATS[fmt].written


def quantize(
    tensors: Tensors,
    fmt: str,
    which: Callable[[str, tuple[int, ...]], bool] | None = None,
    options: Callable[[str], dict[str, Any]] | None = None,
) -> Tensors:
    """`tensors` with every weight `which` picks (default: every quantizable one) stored in
    `fmt`'s layout, as `quantize` writes it (FormatSpec.written), and its marker; `options`:
    a weight's format options over the defaults (e.g. its ConvRot group size)."""
    write_layout = written(fmt)
    assert write_layout is not None, fmt
    out: Tensors = {}
    for name, (dtype, shape, raw) in tensors.items():
        pick = which(name, shape) if which else True
        opts = {**default_options(fmt), **(options(name) if options else {})}
        if not (pick and quantizable(name, shape, fmt, opts)):
            out[name] = (dtype, shape, raw)
            continue
        prefix = name[: -len(".weight")]
        layout, marker = write_layout(shape[0], shape[1], opts, dtype)
        for suffix, (d, s) in layout.items():
            out[f"{prefix}.{suffix}"] = (d, tuple(s), None)
        text = json.dumps({"format": fmt, **marker}).encode()
        out[f"{prefix}.comfy_quant"] = ("U8", (len(text),), text)
    return out


def write(path: Path, tensors: Tensors, metadata: dict[str, str] | None = None) -> Path:
    """A sparse safetensors file holding `tensors` (only given bytes are written)."""
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    placed: list[tuple[int, bytes]] = []
    for name, (dtype, shape, raw) in tensors.items():
        n = ITEMSIZE[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        if raw is not None:
            placed.append((offset, raw))
        offset += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        base = 8 + len(text)
        for at, raw in placed:
            f.seek(base + at)
            f.write(raw)
        f.truncate(base + offset)
    return path


def drop(tensors: Tensors, patterns: Iterable[str]) -> Tensors:
    pats = tuple(patterns)
    return {k: v for k, v in tensors.items() if not any(p in k for p in pats)}


def miniature(name: str, side: int = 128) -> Tensors:
    """The family's names with every dimension above `side` cut to `side`, BF16 with random
    bytes (a layout small enough to quantize for real; detection still reads the cut shapes)."""
    import numpy as np

    rng = np.random.default_rng(0)
    out: Tensors = {}
    for k, shape in shapes(name).items():
        cut = tuple(min(d, side) for d in shape)
        n = 1
        for d in cut:
            n *= d
        values = (rng.standard_normal(n) * 0.02).astype(np.float32)
        out[k] = ("BF16", cut, (values.view(np.uint32) >> 16).astype(np.uint16).tobytes())
    return out


def pruned_h3() -> Tensors:
    """The pruned H3 files' own layout: the time embedder replaced by the F32 [1025, 8] curve
    table, every AdaLN projection taking 8 inputs (F16, as released)."""
    out: Tensors = {}
    for name, (dtype, shape, raw) in bf16(shapes("minimax-h3")).items():
        if name.startswith("time_embedder."):
            continue
        if ".adaln_proj.linear.weight" in name:
            out[name] = ("F16", (shape[0], 8), None)
            continue
        out[name] = (dtype, shape, raw)
    out["adaln_t_table"] = ("F32", (1025, 8), None)
    return out


def released_base(topo: Topology) -> Tensors:
    """The layout a released topology's files have (tests/data/families/)."""
    if topo.name == "minimax-h3-qwen3vl-int8-convrot":
        return bf16(shapes("qwen3vl-32b"))
    if "adaln_t_table" in topo.needs:
        return pruned_h3()
    return bf16(shapes("minimax-h3"))


def convrot(tensors: Tensors, groups: dict[str, int], *, convrot: bool = True) -> Tensors:
    """`tensors` with exactly the modules of `groups` stored as ConvRot INT8 triples."""

    def options(name: str) -> dict[str, Any]:
        size = groups.get(name[: -len(".weight")], 256)
        return {"convrot": convrot, "convrot_groupsize": size, "per_row": convrot}

    return quantize(
        tensors, "int8_tensorwise", lambda n, _s: n[: -len(".weight")] in groups, options
    )
