"""The generated checkpoints of the differential tests: every format, header-only vs marker-only
layers, and the broken variants the InvokeAI and DiffSynth-Studio rules catch (`CASES`); the
builders are shared by every runtime's suite (`<runtime>/diff/`).

Each case is one file holding one quantized linear layer (quantcheck's own quantizer on a fixed
random weight), plus the layer's logical shape and weight (quantcheck's dequantization of the
stored tensors; None where it has none). A weight a runtime loads agrees with it when its
relative error is under `TOLERANCE` (`close`: BF16 rounding and the ConvRot rotation order stay
far below it; rotated or misread weights are far above it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from quantcheck.checking import check_paths
from quantcheck.io.build import RawTensor, write_safetensors
from quantcheck.numeric.api import dequantize, quantize

from ._build import awq, header_meta

P = "blocks.0.attn.qkv"
TOLERANCE = 0.02
Layers = dict[str, tuple[tuple[int, int], Any]]
Case = Callable[[Path], tuple[str, Layers]]


def close(got: Any, want: np.ndarray | None) -> bool:
    """Whether the torch tensor `got` is the layer's weight `want` (within `TOLERANCE`)."""
    import torch

    if want is None:
        return False
    g = got.detach().to(torch.float32).numpy()
    if g.shape != want.shape:
        return False
    return float(np.linalg.norm(g - want) / max(np.linalg.norm(want), 1e-30)) < TOLERANCE


def _weight(n: int, k: int) -> np.ndarray:
    return np.random.default_rng(n * 1000 + k).standard_normal((n, k)).astype(np.float32)


def _marker(conf: Any, raw: bytes | None = None, dtype: str = "U8") -> RawTensor:
    data = raw if raw is not None else json.dumps(conf).encode()
    if dtype == "I16":  # the marker bytes relabelled as I16 (what a dtype-blind tool writes)
        data += b" " * (len(data) % 2)
        return RawTensor(f"{P}.comfy_quant", "I16", (len(data) // 2,), data)
    return RawTensor(f"{P}.comfy_quant", dtype, (len(data),), data)


def layer_case(
    fmt: str,
    n: int = 128,
    k: int = 128,
    *,
    options: dict[str, Any] | None = None,
    marker: Callable[[dict[str, Any]], RawTensor | None] | None = None,
    header: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    drop: tuple[str, ...] = (),
    extra: tuple[tuple[str, str, tuple[int, ...], bytes], ...] = (),
    edit: Callable[[dict[str, tuple[str, np.ndarray]]], None] | None = None,
    top: tuple[RawTensor, ...] = (),
) -> Case:
    """One layer of `fmt`; `marker(conf)` replaces the marker tensor (None: none), `header(conf)`
    gives the header marker (None: no header), `drop` removes stored tensors, `extra` adds,
    `edit` rewrites the stored tensors (suffix -> (dtype, array)) after the reference is taken,
    `top` adds tensors outside the layer."""

    def build(tmp: Path) -> tuple[str, Layers]:
        q = quantize(_weight(n, k), fmt, **(options or {}))
        want = dequantize(fmt, q.arrays(), q.marker, shape=(n, k))
        if edit is not None:
            edit(q.tensors)
        tensors = [
            RawTensor(f"{P}.{s}", dtype, tuple(a.shape), a.tobytes())
            for s, (dtype, a) in q.tensors.items()
            if s not in drop
        ]
        tensors += [RawTensor(f"{P}.{s}", d, sh, b) for s, d, sh, b in extra]
        tensors += list(top)
        m = marker(q.marker) if marker is not None else _marker(q.marker)
        if m is not None:
            tensors.append(m)
        h = header(q.marker) if header is not None else None
        path = tmp / "model.safetensors"
        write_safetensors(path, tensors, header_meta({P: h}) if h is not None else None)
        return str(path), {P: ((n, k), want)}

    return build


def raw_case(make: Callable[[], list[RawTensor]], n: int, k: int) -> Case:
    def build(tmp: Path) -> tuple[str, Layers]:
        path = tmp / "model.safetensors"
        write_safetensors(path, make())
        return str(path), {P: ((n, k), None)}

    return build


INT8 = {"per_row": True}
ROT16 = {"per_row": True, "convrot": True, "convrot_groupsize": 16}
F32_ONE = np.float32(1.0).tobytes()


def _flat_scale(t: dict[str, tuple[str, np.ndarray]]) -> None:
    dtype, a = t["weight_scale"]
    t["weight_scale"] = (dtype, a.reshape(-1).copy())


def _e5m2_codes(t: dict[str, tuple[str, np.ndarray]]) -> None:
    _, a = t["weight"]
    t["weight"] = ("F8_E5M2", a)


def _legacy(t: dict[str, tuple[str, np.ndarray]]) -> None:
    t["scale_weight"] = t.pop("weight_scale")


def _no_group(conf: dict[str, Any]) -> RawTensor:
    return _marker({k: v for k, v in conf.items() if k != "convrot_groupsize"})


CASES: dict[str, Case] = {
    "fp8": layer_case("float8_e4m3fn"),
    "fp8-input-scale": layer_case("float8_e4m3fn", extra=(("input_scale", "F32", (), F32_ONE),)),
    "fp8-unmarked": layer_case("float8_e4m3fn", marker=lambda c: None),
    "fp8-legacy-scaled-fp8": layer_case(
        "float8_e4m3fn",
        marker=lambda c: None,
        edit=_legacy,
        top=(RawTensor("scaled_fp8", "F8_E4M3", (0,), b""),),
    ),
    "fp8-no-weight-scale": layer_case("float8_e4m3fn", drop=("weight_scale",)),
    "fp8-e5m2": layer_case("float8_e5m2"),
    "int8-scalar": layer_case("int8_tensorwise"),
    "int8-rowwise": layer_case("int8_tensorwise", options=INT8),
    "int8-rowwise-input-scale": layer_case(
        "int8_tensorwise", options=INT8, extra=(("input_scale", "F32", (), F32_ONE),)
    ),
    "int8-scale-1d": layer_case("int8_tensorwise", options=INT8, edit=_flat_scale),
    "fp8-marker-e5m2-weight": layer_case("float8_e4m3fn", edit=_e5m2_codes),
    "int8-convrot": layer_case("int8_tensorwise", options=ROT16),
    "int8-convrot-default-group-fits": layer_case(
        "int8_tensorwise", k=256, options={**ROT16, "convrot_groupsize": 256}, marker=_no_group
    ),
    "int8-convrot-16-group-missing": layer_case(
        "int8_tensorwise", k=256, options=ROT16, marker=_no_group
    ),
    "int8-convrot-default-group-too-big": layer_case(
        "int8_tensorwise", k=64, options=ROT16, marker=_no_group
    ),
    "int8-header-only": layer_case(
        "int8_tensorwise", options=INT8, marker=lambda c: None, header=lambda c: c
    ),
    "int8-header-and-marker": layer_case("int8_tensorwise", options=INT8, header=lambda c: c),
    "int8-format-only-in-header": layer_case(
        "int8_tensorwise",
        options=INT8,
        marker=lambda c: _marker({k: v for k, v in c.items() if k != "format"}),
        header=lambda c: {"format": c["format"]},
    ),
    "int8-marker-bom": layer_case(
        "int8_tensorwise",
        options=INT8,
        marker=lambda c: _marker(c, raw=b"\xef\xbb\xbf" + json.dumps(c).encode()),
    ),
    "int8-marker-zeroed": layer_case(
        "int8_tensorwise", options=INT8, marker=lambda c: _marker(c, raw=bytes(24))
    ),
    "int8-marker-list": layer_case("int8_tensorwise", options=INT8, marker=lambda c: _marker([c])),
    "int8-marker-i8": layer_case(
        "int8_tensorwise", options=INT8, marker=lambda c: _marker(c, dtype="I8")
    ),
    "int8-marker-i16": layer_case(
        "int8_tensorwise", options=INT8, marker=lambda c: _marker(c, dtype="I16")
    ),
    "mxfp8": layer_case("mxfp8"),
    "mxfp8-padded": layer_case("mxfp8", n=96, k=96),
    "nvfp4": layer_case("nvfp4", k=64),
    "w4a8": layer_case("asym_w4a8_int8", n=64, k=256),
    "w6a8": layer_case("w6a8_int8", n=64, k=256),
    "w4a4": layer_case("convrot_w4a4", n=64, k=256),
    "awq": raw_case(awq, 32, 128),
}


Row = tuple[str, str, str, str, str]


def ours(path: str, target: str) -> tuple[str, set[str]]:
    """quantcheck's status of `path` on `target`, and the codes of the findings that affect
    that target."""
    report = check_paths([path], target=target)
    codes = {
        d.code
        for d in report.diagnostics
        if target in d.effective_effects and d.effective_effects[target].value != "none"
    }
    return report.target_status(target)["status"], codes


def judged(
    target: str,
    outcome: Callable[[str, Layers], tuple[str, str]],
    agrees: Callable[[str, str, set[str]], bool],
    tmp: Path,
    ambiguous: dict[str, str] | None = None,
) -> list[Row]:
    """One row per case of `CASES`: (agree / ambiguous / DISAGREE, target, case, the runtime's
    `outcome(path, layers)`, quantcheck's status and codes), `agrees(outcome, status, codes)`
    deciding; `ambiguous`: cases whose disagreement is by design (case -> why)."""
    rows = []
    for name, build in CASES.items():
        folder = tmp / name
        folder.mkdir()
        path, layers = build(folder)
        got, why = outcome(path, layers)
        status, codes = ours(path, target)
        ok = agrees(got, status, codes)
        verdict = "agree" if ok else "ambiguous" if name in (ambiguous or {}) else "DISAGREE"
        rows.append((verdict, target, name, f"{got} ({why})", f"{status} {sorted(codes)}"))
    return rows


def assert_agree(rows: list[Row], capsys: Any) -> None:
    """Print the rows and how many agree (the suite's record), then fail on a DISAGREE."""
    with capsys.disabled():
        agree = sum(r[0] == "agree" for r in rows)
        ambiguous = sum(r[0] == "ambiguous" for r in rows)
        print(f"\n{agree}/{len(rows)} verdicts agree, {ambiguous} ambiguous by design (AMBIGUOUS)")
        for r in rows:
            print(" | ".join(r))
    bad = [" | ".join(r) for r in rows if r[0] == "DISAGREE"]
    assert not bad, "\n".join(bad)
