"""A checkpoint: one or many safetensors shards, their tensors, layers and markers."""

from __future__ import annotations

import os
import stat
from operator import attrgetter

from quantcheck._record import factory, record
from quantcheck.diagnostics import Diagnostic, json_pointer
from quantcheck.errors import InputError as InputError  # re-exported: callers catch it here
from quantcheck.io.header import Header, TensorInfo, read_header
from quantcheck.io.json_depth import loads_bounded
from quantcheck.io.source import (
    ByteSource,
    LocalFile,
    NotRegularFileError,
    base_name,
    file_kind,
    read_regular,
)
from quantcheck.model.layers import Layer, group_layers
from quantcheck.model.markers import (
    Marker,
    MarkerSource,
    merge_markers,
    read_header_markers,
    read_tensor_markers,
)
from quantcheck.model.shard_sets import IncompleteSet, index_member, leaves_folder, missing_shards
from quantcheck.rules import codes as R

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.rules.registry import Rule

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

        return open_remote_source(path)
    return LocalFile(path)


def expand_inputs(paths: list[str]) -> tuple[list[str], str | None, list[Diagnostic]]:
    """Turn files, folders and index files into an ordered list of shard paths."""
    files: list[str] = []
    index: str | None = None
    diags: list[Diagnostic] = []
    for p in paths:
        if p.startswith("hf://"):
            from quantcheck.io.hubcache import lookup

            p = lookup(p) or p  # the local Hugging Face cache holds it: no request
        if "://" in p:
            from quantcheck.io.remote import expand_remote

            more, idx, d = expand_remote(p)
            files += more
            index = index or idx
            diags += d
            continue
        st = _stat(p)
        if st is not None and stat.S_ISDIR(st.st_mode):
            names = sorted(os.listdir(p))
            idx_names = [n for n in names if n.endswith(".safetensors" + INDEX_SUFFIX)]
            if idx_names:
                index = os.path.join(p, idx_names[0])
                more, d = shards_from_index(index)
                files += more
                diags += d
                continue
            found = [os.path.join(p, n) for n in names if n.endswith(".safetensors")]
            if not found:
                raise InputError(f"{p}: folder holds no .safetensors files")
            files += found
        elif p.endswith(INDEX_SUFFIX):
            if st is None:
                raise InputError(f"{p}: no such file")
            index = p
            more, d = shards_from_index(p)
            files += more
            diags += d
        else:
            if st is None:
                raise InputError(f"{p}: no such file or folder")
            files.append(p)
    return _unique_files(files) if len(files) > 1 else files, index, diags


def _stat(path: str) -> os.stat_result | None:
    """`os.stat(path)`, or None where `os.path.exists` would say False."""
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _unique_files(files: list[str]) -> list[str]:
    """`files` without repeats: the same spelling, or the same file under another spelling
    (`a.safetensors` and `./a.safetensors`, a symlink and its target: same st_dev/st_ino).
    The first spelling is kept; a file that cannot be stat'ed stays (opening it reports why)."""
    seen: set[object] = set()
    out = []
    for f in files:
        key: object = f
        if "://" not in f:
            try:
                st = os.stat(f)
                key = (st.st_dev, st.st_ino)
            except (OSError, ValueError):
                pass
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


_INDEX_DOCS: dict[tuple[str, int, int], Any] = {}


def _index_doc(path: str) -> Any:
    """An index.json parsed once per (path, size, mtime): shards and the weight_map check share
    it. Raises ValueError / RecursionError for bad JSON and OSError for I/O."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    if key not in _INDEX_DOCS:
        raw = read_regular(path, 64 * 1024 * 1024 + 1)  # never a FIFO: it would block
        if len(raw) > 64 * 1024 * 1024:
            raise ValueError("index file is over 64 MiB")
        _INDEX_DOCS.clear()  # keep one: a process rarely checks several indexes
        _INDEX_DOCS[key] = loads_bounded(raw)
    return _INDEX_DOCS[key]


def shards_from_index(index_path: str) -> tuple[list[str], list[Diagnostic]]:
    """Shard paths from an index's weight_map; paths leaving the index's folder are refused."""
    diags: list[Diagnostic] = []
    try:
        doc = _index_doc(index_path)
    except (ValueError, RecursionError) as exc:
        diags.append(Diagnostic(R.QC503, f"index is not valid JSON: {exc}", file=index_path))
        return [], diags
    wmap = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(wmap, dict) or not wmap or not all(isinstance(v, str) for v in wmap.values()):
        diags.append(
            Diagnostic(
                R.QC503,
                "index has no weight_map object of tensor name -> shard file",
                file=index_path,
                pointer="/weight_map",
            )
        )
        return [], diags
    folder = os.path.dirname(index_path)
    out: list[str] = []
    for shard in dict.fromkeys(wmap.values()):
        problem = _shard_problem(folder, shard)
        if problem is not None:
            code, text = problem
            diags.append(
                Diagnostic(
                    code,
                    text,
                    file=index_path,
                    pointer=json_pointer("weight_map") if code is R.QC502 else None,
                )
            )
            continue
        out.append(os.path.join(folder, shard))
    return out, diags


def weight_map_names(index_path: str) -> list[str]:
    """The shard names an index's weight_map gives, in order, each once; [] when the index
    cannot be read or has no such map (checking it reports why). Discovery uses it to know
    which files an index claims; it never raises for the index."""
    try:
        doc = _index_doc(index_path)
    except (OSError, ValueError, RecursionError):
        return []
    wmap = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(wmap, dict):
        return []
    return [v for v in dict.fromkeys(wmap.values()) if isinstance(v, str)]


def _shard_problem(folder: str, shard: str) -> tuple[Rule, str] | None:
    """Why the shard file `shard` named by an index in `folder` is not opened, or None. The
    name is judged by name (`index_member`): a shard that is a symlink is opened wherever it
    points, as a loader would (a Hugging Face cache snapshot is all symlinks)."""
    if "\x00" in shard:
        return R.QC504, f"shard {shard!r} named by the index holds a NUL byte; no file has it"
    if leaves_folder(shard):
        return R.QC502, f"shard path {shard!r} leaves the index's folder; it was not opened"
    if index_member("", shard) is None:
        return R.QC504, f"shard {shard!r} named by the index names no file"
    try:
        os.fsencode(shard)
    except (ValueError, UnicodeError):
        return R.QC504, f"shard {shard!r} named by the index is not a usable file name"
    try:
        st = os.stat(os.path.join(folder, shard))
    except (OSError, ValueError, UnicodeError):
        return R.QC504, f"shard {shard!r} named by the index does not exist"
    if not stat.S_ISREG(st.st_mode):
        return R.QC504, (
            f"shard {shard!r} named by the index is {file_kind(st.st_mode)}, not "
            "a regular file; it was not opened"
        )
    return None


def load_checkpoint(
    paths: list[str] | str, *, read_markers: bool = True, jobs: int = 1
) -> Checkpoint:
    """Open every shard, read headers and marker bytes, group layers and merge markers.

    `jobs` > 1 opens remote shards concurrently (same result, fewer waits on latency)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [os.fspath(paths)]
    if not any("://" in p for p in paths):
        return _load(list(paths), read_markers, jobs)
    from quantcheck.io.limits import checkpoint_budget

    with checkpoint_budget():  # --max-bytes bounds the checkpoint: its index and all shards
        return _load(list(paths), read_markers, jobs)


def _load(paths: list[str], read_markers: bool, jobs: int) -> Checkpoint:
    files, index, diags = expand_inputs(paths)
    if not files and not diags:
        raise InputError("no input files")
    ck = Checkpoint(inputs=list(paths), index=index)
    ck.diagnostics += diags
    remote = sum("://" in f for f in files)
    if jobs > 1 and remote > 1:
        from quantcheck.model.prefetch import open_shards

        shards = open_shards(files, jobs, _open_shard, read_markers=read_markers)
    else:
        shards = [_open_shard(f) for f in files]
    assemble(ck, shards, read_markers=read_markers)
    if index is not None:
        ck.diagnostics += _check_weight_map(index, ck)
    else:
        ck.diagnostics += [_incomplete(gap) for gap in missing_shards(files)]
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


def _check_weight_map(index: str, ck: Checkpoint) -> list[Diagnostic]:
    """Tensors the index places in a shard that does not hold them, and the reverse."""
    try:
        if "://" in index:
            from quantcheck.io.remote import read_remote_json

            doc = read_remote_json(index)
        else:
            doc = _index_doc(index)
    except (OSError, ValueError, RecursionError):
        return []  # shards_from_index reported it
    wmap = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(wmap, dict):
        return []
    folder = os.path.dirname(index)
    out: list[Diagnostic] = []
    loaded = {s.header.file for s in ck.shards}
    for name, shard in wmap.items():
        path = os.path.join(folder, shard) if isinstance(shard, str) else None
        t = ck.tensors.get(name)
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
