"""A checkpoint: one or many safetensors shards, their tensors, layers and markers."""

from __future__ import annotations

import os
from operator import attrgetter

from quantcheck._record import factory, record
from quantcheck.diagnostics import Diagnostic
from quantcheck.errors import InputError as InputError  # re-exported: callers catch it here
from quantcheck.io.header import Header, TensorInfo, read_header
from quantcheck.io.source import ByteSource, LocalFile, NotRegularFileError, base_name
from quantcheck.model.discover import CheckpointSpec
from quantcheck.model.layers import Layer, group_layers
from quantcheck.model.markers import (
    Marker,
    MarkerSource,
    merge_markers,
    read_header_markers,
    read_tensor_markers,
)
from quantcheck.model.shard_sets import IncompleteSet
from quantcheck.rules import codes as R

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

INDEX_SUFFIX = ".index.json"
_BY_KEY = attrgetter("key")


@record
class Shard:
    """One safetensors file: its source and parsed header."""

    source: ByteSource
    header: Header

    @property
    def name(self) -> str:
        return self.header.file


@record
class Checkpoint:
    """All shards of one checkpoint, merged: tensors, layers, markers and container findings."""

    inputs: list[str]
    shards: list[Shard] = factory(list)
    tensors: dict[str, TensorInfo] = factory(dict)
    layers: dict[str, Layer] = factory(dict)
    loose: list[str] = factory(list)
    markers: dict[str, Marker] = factory(dict)
    metadata: dict[str, str] = factory(dict)
    quant_formats: dict[str, str] = factory(dict)  # file -> quant_format
    index: str | None = None
    diagnostics: list[Diagnostic] = factory(list)
    #: The caller's numeric gate (`LayerData.Gate`) every `layer(p)` handle asks before
    #: `dequantize`; None: no gate (`quantcheck.load` sets the rules' gate).
    numeric_gate: Any = None
    #: shards the checkpoint names but that were not opened: {tensor: shard} for the tensors an
    #: index places in one; "" -> the missing members of a shard set without an index
    absent: dict[str, str] = factory(dict)

    def layer(self, prefix: str) -> Any:
        """A layer handle for numerics (`.dequantize()`, asking `numeric_gate` first); KeyError
        for an unknown prefix."""
        from quantcheck.model.layer_data import LayerData

        if prefix not in self.layers:
            raise KeyError(f"no layer {prefix!r} in this checkpoint")
        return LayerData(self, self.layers[prefix], self.numeric_gate)

    def shard_of(self, tensor: TensorInfo) -> Shard:
        for s in self.shards:
            if s.header.file == tensor.file:
                return s
        raise KeyError(tensor.file)

    def close(self) -> None:
        for s in self.shards:
            s.source.close()

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_source(path: str) -> ByteSource:
    """A byte source for a local path or (when supported) a URL."""
    if "://" in path:
        from quantcheck.io.remote import open_remote_source

        return open_remote_source(path)  # an address `model.discover` resolved
    return LocalFile(path)


def load_checkpoint(
    spec: CheckpointSpec | list[str] | str, *, read_markers: bool = True, jobs: int = 1
) -> Checkpoint:
    """Open every shard of a resolved checkpoint (`model.discover`), read headers and marker
    bytes, group layers and merge markers. Nothing is resolved here: the shards, the index's
    weight_map and its findings come with the spec. Paths instead of a spec are resolved
    first as the shards of one checkpoint (`discover.as_one_spec`, the `--as-one` reading).

    `jobs` > 1 opens remote shards concurrently (same result, fewer waits on latency)."""
    if not isinstance(spec, CheckpointSpec):
        from quantcheck.model.discover import as_one_spec

        paths = [spec] if isinstance(spec, (str, os.PathLike)) else spec
        spec = as_one_spec([os.fspath(p) for p in paths])
    if spec.failure is not None:
        raise spec.failure
    assert spec.shards is not None, "load_checkpoint takes a resolved spec"
    if not any("://" in f for f in spec.shards):
        return _load(spec, read_markers, jobs)
    from quantcheck.io.limits import checkpoint_budget

    with checkpoint_budget():  # --max-bytes bounds the checkpoint: its index and all shards
        if spec.index_bytes:
            from quantcheck.io.remote import charge_index

            charge_index(spec.index or spec.name, spec.index_bytes)
        return _load(spec, read_markers, jobs)


def _load(spec: CheckpointSpec, read_markers: bool, jobs: int) -> Checkpoint:
    files, index = spec.shards or [], spec.index
    if not files and not spec.findings:
        raise InputError("no input files")
    ck = Checkpoint(inputs=list(spec.paths), index=index)
    ck.diagnostics += spec.findings
    remote = sum("://" in f for f in files)
    if jobs > 1 and remote > 1:
        from quantcheck.model.prefetch import open_shards

        shards = open_shards(files, jobs, _open_shard, read_markers=read_markers)
    else:
        shards = [_open_shard(f) for f in files]
    assemble(ck, shards, read_markers=read_markers)
    if index is not None:
        ck.diagnostics += _check_weight_map(index, spec.weight_map, ck)
    else:
        gaps = spec.incomplete
        ck.diagnostics += [_incomplete(gap) for gap in gaps]
        if gaps:
            ck.absent[""] = ", ".join(name for gap in gaps for name in gap.missing)
    return ck


def _incomplete(gap: IncompleteSet) -> Diagnostic:
    """The one QC506 finding of an incomplete shard set: the missing members it names (a
    bounded number) and how many there are."""
    if gap.count == 1:
        text = f"{gap.missing[0]} of this shard set is missing (no index names the set)"
    else:
        more = (
            f", and {gap.count - len(gap.missing):,} more" if gap.count > len(gap.missing) else ""
        )
        text = (
            f"{gap.count:,} of the {gap.total:,} members of this shard set are missing (no "
            f"index names the set): {', '.join(gap.missing)}{more}"
        )
    data = {"missing": gap.missing, "missing_count": gap.count, "total": gap.total}
    return Diagnostic(R.QC506, text, file=gap.first, data=data)


def _open_shard(f: str) -> Shard:
    try:
        src = open_source(f)
    except FileNotFoundError as exc:
        raise InputError(f"{f}: no such file") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{f}: is a folder") from exc
    except NotRegularFileError as exc:
        raise InputError(str(exc)) from exc
    try:
        return Shard(src, read_header(src))
    except BaseException:
        src.close()
        raise


def assemble(ck: Checkpoint, shards: list[Shard], *, read_markers: bool = True) -> Checkpoint:
    """Merge parsed shards into `ck`: tensors (repeats across shards reported), metadata,
    `quant_format`, markers from headers and tensors (in sglang's merge order), layers."""
    sources: list[MarkerSource] = []
    seen_in: dict[str, str] = {}
    for shard in shards:
        header, f = shard.header, shard.name
        ck.shards.append(shard)
        ck.diagnostics += header.diagnostics
        if not header.usable:
            continue
        qf = header.metadata.get("quant_format")
        if qf:
            ck.quant_formats[f] = qf
        for k, v in header.metadata.items():
            ck.metadata.setdefault(k, v)
        if len(shards) == 1:  # one file: no name can repeat across shards
            ck.tensors.update(header.tensors)
        for name, t in header.tensors.items() if len(shards) > 1 else ():
            if name in seen_in:
                ck.diagnostics.append(
                    Diagnostic(
                        R.QC501,
                        f"tensor is in both {base_name(seen_in[name])} and "
                        f"{base_name(f)}; loaders keep one silently",
                        file=f,
                        tensor=name,
                    )
                )
            seen_in[name] = f
            ck.tensors[name] = t
        if read_markers:
            hs, hd = read_header_markers(header)
            ts, td = read_tensor_markers(shard.source, header)
            drop = getattr(shard.source, "drop_buffer", None)
            if drop is not None:
                drop()  # header and markers are read: keep no copy of a small file
            ts.sort(key=_BY_KEY)
            sources += hs + ts
            ck.diagnostics += hd + td
    ck.layers, ck.loose = group_layers(ck.tensors)
    ck.markers, md = merge_markers(sources)
    ck.diagnostics += md
    for prefix, marker in ck.markers.items():
        layer = ck.layers.get(prefix)
        if layer is not None:
            layer.marker = marker
    return ck


def _check_weight_map(index: str, wmap: Any, ck: Checkpoint) -> list[Diagnostic]:
    """Tensors the index places in a shard that does not hold them, and the reverse (`wmap`:
    the weight_map read when the index was resolved; None: unreadable, already reported)."""
    if not isinstance(wmap, dict):
        return []
    folder = os.path.dirname(index)
    out: list[Diagnostic] = []
    loaded = {s.header.file for s in ck.shards}
    for name, shard in wmap.items():
        path = os.path.join(folder, shard) if isinstance(shard, str) else None
        t = ck.tensors.get(name)
        if path not in loaded and t is None and isinstance(shard, str):
            ck.absent[name] = shard
        if path in loaded and (t is None or t.file != path):
            out.append(
                Diagnostic(
                    R.QC505,
                    f"the index places {name!r} in {shard!r}, which does not hold it",
                    file=index,
                    tensor=name,
                )
            )
    for name, t in ck.tensors.items():
        if name not in wmap:
            out.append(
                Diagnostic(
                    R.QC505,
                    f"tensor is in {base_name(t.file)} but missing from the index's weight_map",
                    file=index,
                    tensor=name,
                )
            )
    return out
