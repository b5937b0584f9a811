"""Per-layer numeric error of a quantized checkpoint against its original (numpy, streamed).

Row chunks of one layer at a time (`compare_rows`), on a small thread pool: read the original's
rows, dequantize the same rows of the quantized weight to float32, and accumulate max-abs
error, relative L2, cosine similarity and SNR (`numeric.metrics`: float32 blocks, float64 sums,
combined in chunk order). Biases are compared and
reported too (some producers correct them) but never count as failures.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from collections.abc import Callable
from typing import Any

from quantcheck._record import factory, record
from quantcheck._version import document_head
from quantcheck.model.checkpoint import Checkpoint, load_checkpoint
from quantcheck.model.discover import CheckpointSpec
from quantcheck.numeric.errors import NumericError
from quantcheck.progress import Progress


@record
class CompareResult:
    """Rows sorted worst first (by relative L2); `problems` lists layers that could not be
    compared (missing in the original, shape mismatch, unreadable)."""

    layers: list[dict[str, Any]] = factory(list)
    biases: list[dict[str, Any]] = factory(list)
    problems: list[dict[str, str]] = factory(list)

    def to_json(self) -> dict[str, Any]:
        return {
            **document_head("compare", 1),
            "layers": [_jsonable(r) for r in self.layers],
            "biases": [_jsonable(r) for r in self.biases],
            "problems": self.problems,
            "summary": _jsonable(self.summary()),
        }

    def summary(self) -> dict[str, Any]:
        """Layers compared and not, and the worst one (by relative L2; rows are sorted)."""
        worst = self.layers[0] if self.layers else None
        return {
            "layers_compared": len(self.layers),
            "layers_not_compared": len(self.problems),
            "worst_layer": worst["prefix"] if worst else None,
            "worst_rel_l2": worst["rel_l2"] if worst else None,
            "worst_max_abs": worst["max_abs"] if worst else None,
        }


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in row.items():
        if isinstance(v, float) and not math.isfinite(v):
            v = None if math.isnan(v) else ("inf" if v > 0 else "-inf")
        out[k] = v
    return out


def _row(prefix: str, fmt: str | None, m: Any) -> dict[str, Any]:
    return {
        "prefix": prefix,
        "format": fmt,
        "max_abs": m.max_abs,
        "rel_l2": m.rel_l2,
        "cosine": m.cosine,
        "snr_db": m.snr_db,
        "count": m.count,
    }


def compare_checkpoints(
    quantized: CheckpointSpec | list[str],
    original: CheckpointSpec | list[str],
    progress: bool | None = None,
) -> CompareResult:
    """Compare every quantized layer with the same-named weight of the original (each a
    resolved spec, or the shards of one checkpoint)."""
    with load_checkpoint(quantized) as q, load_checkpoint(original) as o:
        return compare_loaded(q, o, progress)


def compare_loaded(q: Checkpoint, o: Checkpoint, progress: bool | None = None) -> CompareResult:
    """`compare_checkpoints` on opened checkpoints.

    Layers are cut into row chunks of a size fixed by their shape (see `compare_rows`); the
    chunks run on a small thread pool, and their partial sums are combined in chunk order, so
    the result is the same for every thread count and CPU.
    """
    from quantcheck.numeric.parallel import num_threads

    result = CompareResult()
    todo = [la for la in q.layers.values() if la.weight is not None]
    threads = num_threads() if _all_local(q) and _all_local(o) else 1
    window: deque[tuple[_LayerRun, Any]] = deque()
    with Progress(len(todo), "compare", enabled=progress) as bar:
        for layer in todo:
            bar.advance(layer.prefix)
            run = _LayerRun(layer)
            for job in _jobs(q, o, layer, run):
                window.append((run, _submit(job, threads)))
                while len(window) > 2 * threads:
                    _finish(*window.popleft(), q, o, result)
        while window:
            _finish(*window.popleft(), q, o, result)
    result.layers.sort(key=lambda r: (-_key(r["rel_l2"]), r["prefix"]))
    result.biases.sort(key=lambda r: (-_key(r["rel_l2"]), r["prefix"]))
    return result


class _Problem(Exception):
    """A layer that cannot be compared (the message goes to `problems`)."""


class _LayerRun:
    """One layer's chunk results, combined in chunk order."""

    def __init__(self, layer: Any) -> None:
        from quantcheck.numeric.metrics import ErrorAccumulator

        self.layer = layer
        self.acc = ErrorAccumulator()
        self.left = 0
        self.failed = False


_ERRORS: tuple[type[BaseException], ...] = (NumericError, _Problem, ValueError, KeyError, OSError)


def _jobs(q: Checkpoint, o: Checkpoint, layer: Any, run: _LayerRun) -> list[Callable[[], Any]]:
    """The layer's work as callables returning ChunkSums (or raising a compare problem)."""
    from quantcheck.numeric.compare_rows import plan
    from quantcheck.numeric.metrics import chunk_sums

    ref_layer = o.layers.get(layer.prefix)
    if ref_layer is None or ref_layer.weight is None:
        jobs: list[Callable[[], Any]] = [_raiser("no such weight in the original")]
    else:
        try:
            p = plan(q, o, layer.prefix)
        except _ERRORS as exc:
            p, jobs = None, [_raiser(str(exc))]
        else:
            jobs = [lambda: _whole(q, o, layer.prefix)]
        if p is not None:
            jobs = [
                functools.partial(lambda r0, r1: chunk_sums(p.ref(r0, r1), p.test(r0, r1)), r0, r1)
                for r0, r1 in p.chunks
            ]
    run.left = len(jobs)
    return jobs


def _raiser(message: str) -> Callable[[], Any]:
    def fail() -> Any:
        raise _Problem(message)

    return fail


def _whole(q: Checkpoint, o: Checkpoint, prefix: str) -> list[Any]:
    """A layer without a row plan: dequantize it whole, then sum it in fixed row chunks."""
    import numpy as np

    from quantcheck.model.layer_data import LayerData
    from quantcheck.numeric.compare_rows import chunk_rows
    from quantcheck.numeric.metrics import chunk_sums
    from quantcheck.rules.numeric.gate import numeric_refusal

    try:  # the rules' numeric gate: a layer they reject is not compared
        ref = o.layer(prefix).read("weight").astype(np.float32)
        ref2 = ref.reshape(ref.shape[0], -1) if ref.ndim > 1 else ref
        test = LayerData(q, q.layers[prefix], numeric_refusal).dequantize(
            shape=tuple(ref2.shape) if ref2.ndim == 2 and q.layers[prefix].marker else None
        )
    except NumericError as exc:
        raise _Problem(str(exc)) from exc
    if test.size != ref.size:
        raise _Problem(f"shape {list(test.shape)} vs original {list(ref.shape)}")
    a, b = ref.reshape(-1), test.reshape(-1)
    k = ref2.shape[1] if ref2.ndim == 2 else a.size
    step = chunk_rows(k) * k
    return [chunk_sums(a[s : s + step], b[s : s + step]) for s in range(0, a.size, step)]


def _finish(
    run: _LayerRun, future: Any, q: Checkpoint, o: Checkpoint, result: CompareResult
) -> None:
    """Take one job's result (in submission order); close the layer after its last job."""
    layer = run.layer
    try:
        sums = future.result()
    except _ERRORS as exc:
        if not run.failed:
            result.problems.append({"prefix": layer.prefix, "problem": str(exc)})
        run.failed = True
        sums = []
    for s in sums if isinstance(sums, list) else [sums]:
        run.acc.add(s)
    run.left -= 1
    if run.left or run.failed:
        return
    fmt = layer.format if isinstance(layer.format, str) else None
    result.layers.append(
        _row(layer.prefix, fmt or f"{layer.weight.dtype} (unquantized)", run.acc.result())
    )
    ref_layer = o.layers[layer.prefix]
    if "bias" in layer.tensors and "bias" in ref_layer.tensors:
        import numpy as np

        from quantcheck.numeric.metrics import ErrorAccumulator

        b_acc = ErrorAccumulator()
        b_acc.update(
            o.layer(layer.prefix).read("bias").astype(np.float32),
            q.layer(layer.prefix).read("bias").astype(np.float32),
        )
        result.biases.append(_row(layer.prefix, None, b_acc.result()))


class _Done:
    """A finished job run on the calling thread (the one-thread path)."""

    def __init__(self, job: Callable[[], Any]) -> None:
        try:
            self.value, self.error = job(), None
        except BaseException as exc:  # re-raised by result(), like a Future
            self.value, self.error = None, exc

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


_POOLS: dict[int, Any] = {}


def _submit(job: Callable[[], Any], threads: int) -> Any:
    if threads <= 1:
        return _Done(job)
    pool = _POOLS.get(threads)
    if pool is None:
        from concurrent.futures import ThreadPoolExecutor

        pool = _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="qc-compare")
    return pool.submit(job)


def _all_local(ck: Checkpoint) -> bool:
    """Every shard is a local file (remote sources are read from one thread)."""
    from quantcheck.io.source import LocalFile

    return all(isinstance(s.source, LocalFile) for s in ck.shards)


def _key(v: float) -> float:
    return math.inf if math.isnan(v) else v


def render_table(result: CompareResult, limit: int | None = None) -> str:
    """The worst-first text table."""
    rows = result.layers[:limit] if limit else result.layers
    out = [
        f"{'LAYER':<60} {'FORMAT':<18} {'MAX ABS':>10} {'REL L2':>9} {'COSINE':>9} {'SNR dB':>7}"
    ]
    from quantcheck.progress import cut_right
    from quantcheck.textsafe import clean

    for r in rows:
        out.append(
            f"{cut_right(clean(r['prefix']), 60):<60} {clean(r['format'])[:18]:<18} "
            f"{r['max_abs']:>10.3g} {r['rel_l2']:>9.4f} {r['cosine']:>9.6f} "
            f"{r['snr_db']:>7.1f}"
        )
    if limit and len(result.layers) > limit:
        out.append(f"… {len(result.layers) - limit} more layers (--all shows every layer)")
    changed = [b for b in result.biases if b["max_abs"] > 0]
    if result.biases:
        out.append(
            f"\nbiases: {len(result.biases)} compared, {len(changed)} differ from the "
            "original (reported, not a failure: some producers correct biases)"
        )
    for p in result.problems:
        out.append(f"not compared: {clean(p['prefix'])}: {clean(p['problem'])}")
    out.append(summary_line(result))
    return "\n".join(out)


def summary_line(result: CompareResult) -> str:
    """The closing line: how many layers were compared, the worst error and where."""
    s = result.summary()  # the JSON summary's figures, so text and JSON cannot disagree
    n, skipped = s["layers_compared"], s["layers_not_compared"]
    tail = f", {skipped} not compared" if skipped else ""
    if not n:
        return f"compared 0 layers{tail}"
    from quantcheck.textsafe import clean

    cosine = result.layers[0]["cosine"]  # the worst layer's (rows sorted worst first)
    return (
        f"compared {n} layer{'s' if n != 1 else ''}{tail}: worst relative L2 "
        f"{s['worst_rel_l2']:.4f} (cosine {cosine:.6f}, max abs {s['worst_max_abs']:.3g}) "
        f"in {clean(s['worst_layer'])}"
    )
