"""From what ComfyUI's and comfy-kitchen's code picked (gpu_oracle.LayerPath) to a per-layer
mode, and the comparison with quantcheck's `targets[T].gpu[G]` (pure: no torch, no ComfyUI;
unit-tested in test_gpu_compare.py).

A layer's mode, from the oracle:
- `refused`: ComfyUI's load raised, or no comfy-kitchen backend can take the layer's matmul
  (the forward raises NoCapableBackendError on the device too);
- `emulated`: ComfyUI dequantized the weight for the forward (the format is disabled on the
  device, or the marker asks for full-precision matmul), or comfy-kitchen's pick is an eager
  op that dequantizes ([READ] `EAGER_NATIVE`);
- `native`: a comfy-kitchen device backend (cuda, hip, triton) takes the matmul, or an eager op
  that is torch's own low-precision kernel ([READ]);
- `depends`: the AWQ CUDA kernel, which dequantizes above `awq_limit` tokens ([READ] its
  constant `_AWQ_W4A16_MMA_M_LIMIT`; the HIP kernel has no such branch);
- FP8 calls no comfy-kitchen op: torch's `scaled_mm` runs it where torch's own FP8 device
  test says it can (`fp8_device`, run under the device's facts by gpu_oracle.torch_fp8) and N
  and K are multiples of 16 ([READ]: its shape error); elsewhere its error sends the layer to
  comfy-kitchen's dequantize fallback.
`read` says which of these steps were read, not run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Backends that are a device kernel (not comfy-kitchen's portable torch code).
DEVICE_BACKENDS = frozenset({"cuda", "hip", "triton"})
FP8 = frozenset({"float8_e4m3fn", "float8_e5m2"})
#: torch `scaled_mm` shape rule for FP8 operands ([READ] torch: "mat2 shape ... must be
#: divisible by 16"); comfy-kitchen's tensor/fp8.py catches the error and dequantizes.
SCALED_MM_MULTIPLE = 16


@dataclass(frozen=True)
class Verdict:
    mode: str
    reason: str
    read: bool = False  # some step [READ], not run


def oracle_mode(
    path: Any,
    fmt: str | None,
    n: int,
    k: int,
    *,
    eager_native: dict[str, tuple[bool, str]],
    awq_limit: int,
    device_type: str,
    fp8_device: bool = True,
) -> Verdict:
    """The mode of one layer from the oracle's `LayerPath` (see the module docstring)."""
    if path.error.startswith("load:"):
        return Verdict("refused", f"ComfyUI's load raises ({path.error})")
    if not path.quantized:
        why = "full_precision_mm" if path.full_precision_mm else "a float weight"
        return Verdict("emulated", f"ComfyUI dequantizes the weight every forward ({why})")
    if not path.calls:
        if fmt in FP8:
            if n % SCALED_MM_MULTIPLE or k % SCALED_MM_MULTIPLE:
                return Verdict(
                    "emulated",
                    f"[READ] torch scaled_mm refuses N={n}, K={k} (not multiples of 16): "
                    "tensor/fp8.py falls back to dequantization",
                    True,
                )
            if not fp8_device:
                return Verdict("emulated", f"[READ] no FP8 scaled_mm on {device_type}", True)
            return Verdict("native", "[READ] torch scaled_mm (FP8), no comfy-kitchen op", True)
        return Verdict("emulated", f"no matmul op dispatched ({path.error or 'dense'})", True)
    call = path.calls[-1]
    if call.backend is None:
        return Verdict("refused", f"comfy-kitchen has no backend for {call.op}: {call.why}")
    if call.backend in DEVICE_BACKENDS:
        if call.op == "gemv_awq_w4a16" and call.backend == "cuda":  # HIP's has no M branch
            return Verdict(
                "depends",
                f"comfy-kitchen {call.backend} {call.op}: its kernel for M <= {awq_limit} "
                "tokens, dequantize + matmul above ([READ] _AWQ_W4A16_MMA_M_LIMIT)",
                True,
            )
        return Verdict("native", f"comfy-kitchen {call.backend} {call.op}")
    native, what = eager_native.get(call.op, (False, f"eager {call.op}"))
    if device_type not in ("cuda", "cpu"):
        native, what = False, f"{what}, off CUDA"
    return Verdict("native" if native else "emulated", f"[READ] {what}", True)


def format_summary(modes: dict[str, list[str]]) -> dict[str, str]:
    """Per format: its layers' one mode, or `mixed` (as quantcheck's `formats` says)."""
    return {fmt: ms[0] if len(set(ms)) == 1 else "mixed" for fmt, ms in modes.items() if ms}


@dataclass
class Comparison:
    """Layer and format agreements of one (file, GPU) pair."""

    agree: int = 0
    allowed: list[str] = field(default_factory=list)
    disagree: list[str] = field(default_factory=list)
    read_only: list[str] = field(default_factory=list)


def compare(
    oracle: dict[str, tuple[str | None, Verdict]],
    entry: dict[str, Any],
    allow: dict[tuple[str, str, str], str],
    *,
    label: str,
) -> Comparison:
    """Compare the oracle's modes (layer -> (format, verdict)) with quantcheck's GPU entry.
    `allow` maps (format, the oracle's mode, quantcheck's mode) -> the documented reason the
    two may differ for this device; every other difference is a disagreement, named with both
    reasons."""
    out = Comparison()
    execution = entry.get("execution", {})
    by_format: dict[str, list[str]] = {}
    for layer, (fmt, verdict) in sorted(oracle.items()):
        theirs = execution.get(layer)
        key = fmt or "?"
        by_format.setdefault(key, []).append(verdict.mode)
        if verdict.read:
            out.read_only.append(f"{label} {layer}: {verdict.reason}")
        if theirs is None:
            out.disagree.append(f"{label} {layer}: quantcheck has no execution entry")
            continue
        if theirs["mode"] == verdict.mode:
            out.agree += 1
            continue
        why = allow.get((key, verdict.mode, theirs["mode"]))
        line = (
            f"{label} {layer} ({key}): ComfyUI {verdict.mode} ({verdict.reason}); "
            f"quantcheck {theirs['mode']} ({theirs.get('reason', '')})"
        )
        if why is not None:
            out.allowed.append(f"{line} -- allowed: {why}")
        else:
            out.disagree.append(line)
    for fmt, mode in format_summary(by_format).items():
        got = entry.get("formats", {}).get(fmt)
        if got == mode:
            out.agree += 1
        elif (fmt, mode, str(got)) in allow:
            why = allow[(fmt, mode, str(got))]
            out.allowed.append(
                f"{label} format {fmt}: ComfyUI {mode}, quantcheck {got} -- allowed: {why}"
            )
        else:
            out.disagree.append(f"{label} format {fmt}: ComfyUI {mode}, quantcheck {got}")
    return out
