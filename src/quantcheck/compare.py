"""Per-layer numeric error of a quantized checkpoint against its original (numpy, streamed).

One layer at a time: dequantize the quantized weight to float32, read the original weight,
accumulate max-abs error, relative L2, cosine similarity and SNR. Biases are compared and
reported too (some producers correct them) but never count as failures.
"""

from __future__ import annotations

import math
from typing import Any

from quantcheck._record import factory, record
from quantcheck.checkpoint import Checkpoint, load_checkpoint
from quantcheck.progress import Progress


@record
class CompareResult:
    """Rows sorted worst first (by relative L2); `problems` lists layers that could not be
    compared (missing in the original, shape mismatch, unreadable)."""

    layers: list[dict[str, Any]] = factory(list)
    biases: list[dict[str, Any]] = factory(list)
    problems: list[dict[str, str]] = factory(list)

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": 1, "tool": "quantcheck", "kind": "compare",
                "layers": [_jsonable(r) for r in self.layers],
                "biases": [_jsonable(r) for r in self.biases], "problems": self.problems}


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in row.items():
        if isinstance(v, float) and not math.isfinite(v):
            v = None if math.isnan(v) else ("inf" if v > 0 else "-inf")
        out[k] = v
    return out


def _row(prefix: str, fmt: str | None, m: Any) -> dict[str, Any]:
    return {"prefix": prefix, "format": fmt, "max_abs": m.max_abs, "rel_l2": m.rel_l2,
            "cosine": m.cosine, "snr_db": m.snr_db, "count": m.count}


def compare_checkpoints(quantized: list[str], original: list[str],
                        progress: bool | None = None) -> CompareResult:
    """Compare every quantized layer with the same-named weight of the original."""
    with load_checkpoint(quantized) as q, load_checkpoint(original) as o:
        return compare_loaded(q, o, progress)


def compare_loaded(q: Checkpoint, o: Checkpoint, progress: bool | None = None) -> CompareResult:
    """`compare_checkpoints` on opened checkpoints."""
    import numpy as np

    from quantcheck.numeric import NumericError
    from quantcheck.numeric.metrics import ErrorAccumulator

    result = CompareResult()
    todo = [la for la in q.layers.values() if la.weight is not None]
    with Progress(len(todo), "compare", enabled=progress) as bar:
        for layer in todo:
            bar.advance(layer.prefix)
            ref_layer = o.layers.get(layer.prefix)
            if ref_layer is None or ref_layer.weight is None:
                result.problems.append({"prefix": layer.prefix,
                                        "problem": "no such weight in the original"})
                continue
            try:
                ref = o.layer(layer.prefix).read("weight").astype(np.float32)
                ref2 = ref.reshape(ref.shape[0], -1) if ref.ndim > 1 else ref
                test = q.layer(layer.prefix).dequantize(
                    shape=tuple(ref2.shape) if ref2.ndim == 2 and layer.marker else None)
            except (NumericError, ValueError, KeyError, OSError) as exc:
                result.problems.append({"prefix": layer.prefix, "problem": str(exc)})
                continue
            if test.size != ref.size:
                result.problems.append({"prefix": layer.prefix, "problem":
                                        f"shape {list(test.shape)} vs original "
                                        f"{list(ref.shape)}"})
                continue
            acc = ErrorAccumulator()
            acc.update(ref.reshape(-1), test.reshape(-1))
            fmt = layer.format if isinstance(layer.format, str) else None
            assert layer.weight is not None  # `todo` holds layers with a weight
            result.layers.append(_row(layer.prefix, fmt or f"{layer.weight.dtype} (unquantized)",
                                      acc.result()))
            if "bias" in layer.tensors and "bias" in ref_layer.tensors:
                b_acc = ErrorAccumulator()
                b_acc.update(o.layer(layer.prefix).read("bias").astype(np.float32),
                             q.layer(layer.prefix).read("bias").astype(np.float32))
                result.biases.append(_row(layer.prefix, None, b_acc.result()))
    result.layers.sort(key=lambda r: (-_key(r["rel_l2"]), r["prefix"]))
    result.biases.sort(key=lambda r: (-_key(r["rel_l2"]), r["prefix"]))
    return result


def _key(v: float) -> float:
    return math.inf if math.isnan(v) else v


def render_table(result: CompareResult, limit: int | None = None) -> str:
    """The worst-first text table."""
    rows = result.layers[:limit] if limit else result.layers
    out = [f"{'LAYER':<60} {'FORMAT':<18} {'MAX ABS':>10} {'REL L2':>9} {'COSINE':>9} "
           f"{'SNR dB':>7}"]
    for r in rows:
        out.append(f"{r['prefix'][-60:]:<60} {str(r['format'])[:18]:<18} {r['max_abs']:>10.3g} "
                   f"{r['rel_l2']:>9.4f} {r['cosine']:>9.6f} {r['snr_db']:>7.1f}")
    if limit and len(result.layers) > limit:
        out.append(f"… {len(result.layers) - limit} more layers (--all shows every layer)")
    changed = [b for b in result.biases if b["max_abs"] > 0]
    if result.biases:
        out.append(f"\nbiases: {len(result.biases)} compared, {len(changed)} differ from the "
                   "original (reported, not a failure: some producers correct biases)")
    for p in result.problems:
        out.append(f"not compared: {p['prefix']}: {p['problem']}")
    return "\n".join(out)
