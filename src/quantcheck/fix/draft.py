"""An editable view of a checkpoint: tensors (as byte payloads), metadata and markers per shard.

Edits never touch the input; `files()` turns the draft into `OutFile`s for the streaming writer.
Every tensor not edited stays a `Copy` of its input bytes (byte-identical output).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from quantcheck.io.writer import Copy, Data, OutFile, OutTensor, Payload
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.markers import MARKER_SUFFIX

QMETA = "_quantization_metadata"


@dataclass
class DraftFile:
    """One output shard being edited."""

    name: str
    order: list[str]
    metadata: dict[str, str]


@dataclass
class Edit:
    """One applied change, for the plan and the report."""

    code: str
    where: str
    description: str
    safety: str
    targets: tuple[str, ...] = ()
    layer: str = ""


@dataclass
class Draft:
    """Tensors by name, their file, pending marker rewrites and the log of edits."""

    ck: Checkpoint
    files: list[DraftFile] = field(default_factory=list)
    tensors: dict[str, OutTensor] = field(default_factory=dict)
    where: dict[str, int] = field(default_factory=dict)
    after: dict[str, list[str]] = field(default_factory=dict)
    markers: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    header_drop: set[str] = field(default_factory=set)
    edits: list[Edit] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)
    #: True (`fix --profile portable`): a rewritten marker is written both as the layer's
    #: `.comfy_quant` tensor and as its header `_quantization_metadata` entry (same object);
    #: False: as the tensor only, its header entry dropped.
    sync_header: bool = False
    #: Header entries to write: layer prefix -> marker fields (in the file of the layer's weight).
    header_set: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, ck: Checkpoint, sync_header: bool = False) -> Draft:
        d = cls(ck, sync_header=sync_header)
        for i, shard in enumerate(ck.shards):
            h = shard.header
            d.files.append(
                DraftFile(os.path.basename(shard.name), list(h.tensors), dict(h.metadata))
            )
            for name, t in h.tensors.items():
                d.tensors[name] = OutTensor(
                    name, t.dtype, t.shape, Copy(shard.source, t.begin, t.nbytes)
                )
                d.where[name] = i
        return d

    # ---------------------------------------------------------------- tensors
    def get(self, name: str) -> OutTensor | None:
        return self.tensors.get(name)

    def set(
        self,
        name: str,
        dtype: str | None = None,
        shape: tuple[int, ...] | None = None,
        data: Payload | None = None,
    ) -> None:
        t = self.tensors[name]
        self.tensors[name] = OutTensor(
            name,
            dtype or t.dtype,
            t.shape if shape is None else tuple(shape),
            t.data if data is None else data,
        )
        self.touched.add(name)

    def drop(self, name: str) -> None:
        if self.tensors.pop(name, None) is not None:
            self.touched.add(name)

    def add(self, t: OutTensor, after: str) -> None:
        """Add `t` right after the tensor `after` (in that tensor's file)."""
        self.tensors[t.name] = t
        self.where[t.name] = self.where[after]
        self.after.setdefault(after, []).append(t.name)
        self.touched.add(t.name)

    def rename(self, old: str, new: str) -> None:
        t = self.tensors.pop(old)
        self.tensors[new] = OutTensor(new, t.dtype, t.shape, t.data)
        self.where[new] = self.where[old]
        self.after.setdefault(old, []).append(new)
        self.touched.update((old, new))

    def layer_anchor(self, prefix: str) -> str | None:
        """The last existing tensor of a layer in its weight's file (where new ones go)."""
        layer = self.ck.layers.get(prefix)
        names = [t.name for t in layer.tensors.values()] if layer else []
        names = [n for n in names if n in self.where]
        if not names:
            return None
        f = self.where.get(f"{prefix}.weight", self.where[names[0]])
        order = {n: i for i, n in enumerate(self.files[f].order)}
        names = [n for n in names if self.where[n] == f and n in order]
        return max(names, key=order.__getitem__) if names else None

    # ---------------------------------------------------------------- markers
    def marker(self, prefix: str) -> dict[str, Any] | None:
        """The working copy of a layer's marker fields (None when dropped); marks it rewritten."""
        if prefix not in self.markers:
            m = self.ck.markers.get(prefix)
            self.markers[prefix] = json.loads(json.dumps(m.fields)) if m else {}
        return self.markers[prefix]

    def set_marker(self, prefix: str, fields: dict[str, Any] | None) -> None:
        self.markers[prefix] = fields

    def drop_header_entry(self, key: str) -> None:
        self.header_drop.add(key)

    def set_header_entry(self, prefix: str, fields: dict[str, Any]) -> None:
        """Write `fields` as the header entry of `prefix` (in its weight's file; the entry is
        removed from any other file's header); the marker tensor is left as it is."""
        self.header_set[prefix] = fields

    def home(self, prefix: str) -> int:
        """Index of the file holding the layer's weight (else its marker tensor, else 0)."""
        for name in (f"{prefix}.weight", prefix + MARKER_SUFFIX):
            if name in self.where:
                return self.where[name]
        return 0

    # ---------------------------------------------------------------- output
    def _apply_markers(self) -> None:
        for prefix, fields in self.markers.items():
            name = prefix + MARKER_SUFFIX
            if fields is not None and (self.sync_header or prefix in self.header_set):
                self.header_set[prefix] = fields
            else:
                self.header_drop.add(prefix)
                self.header_set.pop(prefix, None)
            if fields is None:
                self.drop(name)
                continue
            data = json.dumps(fields).encode("utf-8")
            if name in self.tensors:
                self.set(name, "U8", (len(data),), Data(data))
                continue
            anchor = self.layer_anchor(prefix)
            if anchor is None:
                raise ValueError(f"cannot place a marker for {prefix!r}: the layer has no tensors")
            self.add(OutTensor(name, "U8", (len(data),), Data(data)), anchor)
        self.markers = {}

    def _metadata(self, meta: dict[str, str], index: int = 0) -> dict[str, str]:
        if self.header_set:
            return self._synced_metadata(meta, index)
        text = meta.get(QMETA)
        if text is None or not self.header_drop:
            return meta
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            return meta
        layers = doc.get("layers") if isinstance(doc, dict) else None
        if not isinstance(layers, dict) or not (self.header_drop & layers.keys()):
            return meta
        for key in self.header_drop:
            layers.pop(key, None)
        out = dict(meta)
        if layers:
            out[QMETA] = json.dumps(doc)
        else:
            del out[QMETA]
        return out

    def _synced_metadata(self, meta: dict[str, str], index: int) -> dict[str, str]:
        """`meta` with this file's `header_set` entries written and dropped entries removed; a
        new `_quantization_metadata` gets `format_version` "1.0" (as ComfyUI writes it)."""
        here = {p: f for p, f in self.header_set.items() if self.home(p) == index}
        gone = (self.header_drop - self.header_set.keys()) | (self.header_set.keys() - here.keys())
        text = meta.get(QMETA)
        doc: Any = {"format_version": "1.0", "layers": {}}
        if text is not None:
            try:
                doc = json.loads(text)
            except (ValueError, RecursionError):
                return meta
            if not isinstance(doc, dict) or not isinstance(doc.get("layers", {}), dict):
                return meta
        layers = doc.setdefault("layers", {})
        if not here and not (gone & layers.keys()):
            return meta
        for key in gone:
            layers.pop(key, None)
        layers.update(here)
        out = dict(meta)
        if layers:
            out[QMETA] = json.dumps(doc)
        else:
            out.pop(QMETA, None)
        return out

    def files_out(self) -> list[OutFile]:
        """The edited checkpoint as output files (markers written, header entries dropped)."""
        self._apply_markers()
        outs: list[OutFile] = []
        for i, f in enumerate(self.files):
            out = OutFile(f.name, metadata=self._metadata(f.metadata, i))
            stack = list(reversed(f.order))
            seen: set[str] = set()
            while stack:
                name = stack.pop()
                if name in seen:
                    continue
                seen.add(name)
                t = self.tensors.get(name)
                if t is not None and self.where.get(name) == i:
                    out.tensors.append(t)
                stack.extend(reversed(self.after.get(name, [])))
            outs.append(out)
        return outs

    def log(
        self,
        code: str,
        where: str,
        description: str,
        safety: str,
        targets: tuple[str, ...] = (),
        layer: str = "",
    ) -> None:
        self.edits.append(Edit(code, where, description, safety, targets, layer or where))
