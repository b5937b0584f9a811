"""Layer kinds (`rules/layers/kinds.py`) and the per-checkpoint passes that use them or the
layers instead of every tensor name: each gives what the general pass over names or layers
gives, on files with odd names (empty prefixes, double dots, scales without weights) and with
kinds interleaved."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hostile import marker_bytes, tensors
from quantcheck.diagnostics import Diagnostic
from quantcheck.model.checkpoint import Checkpoint, load_checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules.comfyui.checks import formats_by_step
from quantcheck.rules.diffsynth.checks import check_layer
from quantcheck.rules.layers import kinds as layer_kinds
from quantcheck.rules.layers.memo import layer_key, memo_findings
from quantcheck.rules.sglang.checks import _has_scaled_fp8, _sglang_view, sglang_config_class
from quantcheck.rules.sglang.configs import resolve_comfy_checkpoint_quantization
from quantcheck.rules.sglang.header_path import header_docs, nvfp4_layers
from quantcheck.runtimes.comfyui_releases import FORMAT_SINCE, STEP_CODE

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

ODD_NAMES = [
    ".weight",
    ".weight_scale",
    "weight_scale",
    "scaled_fp8",
    ".scaled_fp8",
    "a.weight",
    "a.weight_scale",
    "b..weight",
    "b..weight_scale",
    "c.weight_scale",  # no weight
    "d.weight",
    "d.weight_scale",
    "d.scaled_fp8",
    "e.x.scaled_fp8",
    "f.weight_scale.weight_scale",
    "g.weight",
    "g.weight_scale.extra",
]


def _odd_file(tmp_path: Path, weight: str, scale: str, shape: tuple[int, ...]) -> Path:
    specs = []
    for name in ODD_NAMES:
        if name.endswith(".weight"):
            specs.append((name, weight, (4, 4)))
        elif "weight_scale" in name:
            specs.append((name, scale, shape))
        else:
            specs.append((name, "F32", ()))
    path = tmp_path / f"odd_{weight}_{scale}_{len(shape)}.safetensors"
    path.write_bytes(tensors(specs))
    return path


def _nvfp4_by_name(ck: Checkpoint) -> list[tuple[str, str]]:
    """The NVFP4 tensor inference read straight off the tensor names (no header docs)."""
    by_file: dict[str, set[str]] = {s.name: set() for s in ck.shards}
    for name, t in ck.tensors.items():
        if not name.endswith(".weight_scale"):
            continue
        prefix = name[: -len(".weight_scale")]
        w = ck.tensors.get(prefix + ".weight")
        if w is not None and w.dtype == "U8" and "F8_E4M3" in t.dtype and len(t.shape) >= 2:
            by_file[t.file].add(prefix)
    return [(f, p) for f, names in by_file.items() for p in sorted(names)]


def _scaled_fp8_by_name(ck: Checkpoint) -> bool:
    return any(n == "scaled_fp8" or n.endswith(".scaled_fp8") for n in ck.tensors)


@pytest.mark.parametrize(
    ("weight", "scale", "shape"),
    [
        ("U8", "F8_E4M3", (4, 1)),
        ("U8", "F8_E4M3", (4,)),
        ("U8", "F32", (4, 1)),
        ("F8_E4M3", "F8_E4M3", (4, 1)),
    ],
)
def test_name_passes_match_a_scan_of_every_name(
    tmp_path: Path, weight: str, scale: str, shape: tuple[int, ...]
) -> None:
    with load_checkpoint([str(_odd_file(tmp_path, weight, scale, shape))]) as ck:
        assert ck.loose  # the odd names really reach the loose-name branch
        expected = _nvfp4_by_name(ck)
        assert nvfp4_layers(ck, header_docs(ck)) == expected
        held = layer_kinds.hold(ck)
        try:
            assert nvfp4_layers(ck, header_docs(ck)) == expected
        finally:
            layer_kinds.let_go(held)
        assert _has_scaled_fp8(ck) is _scaled_fp8_by_name(ck) is True
    if (weight, scale, shape) == ("U8", "F8_E4M3", (4, 1)):
        assert ("" in {p for _, p in expected}) and ("a" in {p for _, p in expected})


@pytest.mark.parametrize(
    "name",
    ["scaled_fp8", ".scaled_fp8", "d.scaled_fp8", "a..scaled_fp8", "scaled_fp8x", "x.scaled_fp8.y"],
)
def test_scaled_fp8_test_matches_a_scan_of_every_name(tmp_path: Path, name: str) -> None:
    path = tmp_path / "m.safetensors"
    path.write_bytes(tensors([("a.weight", "F32", (2, 2)), (name, "F32", ())]))
    with load_checkpoint([str(path)]) as ck:
        assert _has_scaled_fp8(ck) is _scaled_fp8_by_name(ck)


def _interleaved(tmp_path: Path) -> Path:
    """Layers of four kinds, interleaved; formats repeat across kinds (two FP8 shapes)."""
    specs: list[tuple[Any, ...]] = []
    plan = [
        ("blk0.q", "F8_E4M3", (8, 8), {"format": "float8_e4m3fn"}),
        ("blk0.mlp", "F8_E4M3", (16, 8), {"format": "float8_e4m3fn"}),
        ("blk0.norm", "F32", (8,), None),
        ("blk0.x", "U8", (8, 4), {"format": "mxfp8"}),
        ("blk1.q", "F8_E4M3", (8, 8), {"format": "float8_e4m3fn"}),
        ("blk1.x", "U8", (8, 4), {"format": "mxfp8"}),
        ("blk1.mlp", "F8_E4M3", (16, 8), {"format": "float8_e4m3fn"}),
        ("embed_tokens", "F8_E4M3", (8, 8), {"format": "float8_e4m3fn"}),
    ]
    for prefix, dtype, shape, mark in plan:
        specs.append((f"{prefix}.weight", dtype, shape))
        if mark is not None:
            specs.append((f"{prefix}.weight_scale", "F32", ()))
            data = marker_bytes(mark)
            specs.append((f"{prefix}.comfy_quant", "U8", (len(data),), data))
    specs.append(("stray.comfy_quant", "U8", (2,), b"{}"))  # a marker without a weight
    path = tmp_path / "interleaved.safetensors"
    path.write_bytes(tensors(specs))
    return path


def _mixed_sources(tmp_path: Path) -> list[Path]:
    """Two shards whose layers are marked by tensors, header entries or both (agreeing or
    not), with marker fields equal in Python but written differently (1, 1.0, true), the same
    fields in another key order, and the same bytes in both shards: `group_kinds` writes each
    distinct marker out once, and must still group exactly as `signature` does."""
    f8 = {"format": "float8_e4m3fn"}
    x1 = {"format": "float8_e4m3fn", "x": 1}
    plan: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = [  # (tensor, header)
        (f8, None),
        (x1, None),
        ({"format": "float8_e4m3fn", "x": 1.0}, None),
        ({"format": "float8_e4m3fn", "x": True}, None),
        ({"x": 1, "format": "float8_e4m3fn"}, None),
        (None, f8),
        (None, x1),
        (None, {"x": 1, "format": "float8_e4m3fn"}),
        (f8, f8),
        (f8, x1),  # the last source is the same object as the first layer's: fields differ
        (x1, f8),
        (x1, x1),
        ({"x": 1.0}, x1),
    ]
    paths = []
    for shard in range(2):
        specs: list[tuple[Any, ...]] = []
        layers: dict[str, Any] = {}
        for rep in range(2):
            for i, (tensor_fields, header_fields) in enumerate(plan):
                prefix = f"s{shard}.r{rep}.blk{i}"
                specs.append((f"{prefix}.weight", "F8_E4M3", (8, 8)))
                specs.append((f"{prefix}.weight_scale", "F32", ()))
                if tensor_fields is not None:
                    data = marker_bytes(tensor_fields)
                    specs.append((f"{prefix}.comfy_quant", "U8", (len(data),), data))
                if header_fields is not None:
                    layers[prefix] = header_fields
        meta = {"_quantization_metadata": json.dumps({"format_version": "1.0", "layers": layers})}
        path = tmp_path / f"mixed-{shard:05d}-of-00002.safetensors"
        path.write_bytes(tensors(specs, meta))
        paths.append(path)
    return paths


def test_mixed_sources_group_by_merged_fields(tmp_path: Path) -> None:
    with _load(_mixed_sources(tmp_path)) as ck:
        kinds = layer_kinds.group_kinds(ck).kinds
        by_layer = {la.prefix: k for k in kinds for la in k.layers}
        # each plan row is a kind of its own in each shard (the repeats join it), except rows
        # 10 and 11: the same merged fields, sources and tensors though the header differs
        assert len(kinds) == 2 * 12
        for shard in range(2):
            for i in range(13):
                assert by_layer[f"s{shard}.r1.blk{i}"] is by_layer[f"s{shard}.r0.blk{i}"]
            assert by_layer[f"s{shard}.r0.blk10"] is by_layer[f"s{shard}.r0.blk11"]
            # rows 8 and 9 share their last source's object and differ in the header only
            assert by_layer[f"s{shard}.r0.blk8"] is not by_layer[f"s{shard}.r0.blk9"]


def _files(tmp_path: Path) -> list[Path | list[Path]]:
    return [
        _interleaved(tmp_path),
        _mixed_sources(tmp_path),
        *sorted(EXAMPLES.glob("*.safetensors")),
    ]


def _load(path: Path | list[Path]) -> Checkpoint:
    return load_checkpoint([str(p) for p in (path if isinstance(path, list) else [path])])


def test_kinds_cover_every_weighted_layer_in_order(tmp_path: Path) -> None:
    for path in _files(tmp_path):
        with _load(path) as ck:
            kinds = layer_kinds.group_kinds(ck)
            weighted = [la for la in ck.layers.values() if la.weight is not None]
            assert [la for la, _ in kinds.order] == weighted
            assert sorted(id(la) for k in kinds.kinds for la in k.layers) == sorted(
                id(la) for la in weighted
            )
            firsts = [weighted.index(k.first) for k in kinds.kinds]
            assert firsts == sorted(firsts)  # kinds in order of first appearance
            for la, kind in kinds.order:
                assert layer_kinds.signature(la) == kind.signature
                assert la in kind.layers
                assert kind.layers == [x for x in weighted if x in kind.layers]
            marked = [la for la, k in kinds.order if k.marked]
            assert marked == [la for la in weighted if la.marker is not None]
            assert len({k.signature for k in kinds.kinds}) == len(kinds.kinds)


def test_layer_keys_with_a_shared_repr_memo_are_the_plain_ones(tmp_path: Path) -> None:
    for path in _files(tmp_path):
        with _load(path) as ck:
            seen: dict[object, Any] = {}
            for la in ck.layers.values():
                assert layer_key(la, seen) == layer_key(la)


def test_memo_by_kind_computes_the_layers_the_plain_memo_does(tmp_path: Path) -> None:
    def run(ck: Checkpoint, kinds: Any) -> tuple[list[str], list[Diagnostic]]:
        computed: list[str] = []

        def compute(la: Any) -> list[Diagnostic]:
            computed.append(la.prefix)
            return [Diagnostic("QC301", "a finding", layer=la.prefix), *check_layer(la)]

        found = list(memo_findings(ck.layers.values(), compute, kinds))
        return computed, found

    for path in _files(tmp_path):
        with _load(path) as ck:
            plain = run(ck, None)
            assert run(ck, layer_kinds.group_kinds(ck)) == plain
            assert len(plain[0]) < len(ck.layers) or len(ck.layers) < 2


def test_any_layer_has_matches_a_scan_of_every_layer(tmp_path: Path) -> None:
    weighted = tmp_path / "weighted.safetensors"  # every layer has a weight: asked per kind
    weighted.write_bytes(
        tensors(
            [
                ("a.weight", "F8_E4M3", (4, 4)),
                ("b.weight", "F8_E4M3", (4, 4)),
                ("b.scaled_fp8", "F32", ()),
                ("c.weight", "F8_E4M3", (4, 4)),
            ]
        )
    )
    suffixes = ("weight", "weight_scale", "scaled_fp8", "comfy_quant", "input_scale", "x")
    for path in [weighted, *_files(tmp_path)]:
        with _load(path) as ck:
            want = [any(s in la.tensors for la in ck.layers.values()) for s in suffixes]
            assert [layer_kinds.any_layer_has(ck, s) for s in suffixes] == want
            held = layer_kinds.hold(ck)
            try:
                assert [layer_kinds.any_layer_has(ck, s) for s in suffixes] == want
            finally:
                layer_kinds.let_go(held)
            if path is weighted:
                assert len(held.order) == len(ck.layers) and want[2]


def test_interleaved_file_has_several_kinds_per_format(tmp_path: Path) -> None:
    with load_checkpoint([str(_interleaved(tmp_path))]) as ck:
        kinds = layer_kinds.group_kinds(ck).kinds
        assert [k.format for k in kinds] == [
            "float8_e4m3fn",
            "float8_e4m3fn",
            None,
            "mxfp8",
            "float8_e4m3fn",  # embed_tokens: an embedding name is its own kind
        ]


def _config_class_per_layer(ck: Any) -> tuple[str | None, list[str], str | None]:
    """`sglang_config_class` as sglang feeds its resolver: every marked layer's view."""
    views = {la.prefix: _sglang_view(la) for la in ck.layers.values() if la.marker and la.weight}
    formats = sorted({str(v.get("format")) for v in views.values()})
    try:
        return resolve_comfy_checkpoint_quantization(views), formats, None
    except NotImplementedError as exc:
        return None, formats, str(exc)


def test_per_kind_passes_match_per_layer_passes(tmp_path: Path) -> None:
    def merged(la: Any) -> object:
        return la.marker.format if la.marker else None

    for path in _files(tmp_path):
        with _load(path) as ck:
            by_layer = formats_by_step(ck, merged, FORMAT_SINCE, STEP_CODE)
            assert formats_by_step(ck, None, FORMAT_SINCE, STEP_CODE) == by_layer
            # every step, so the per-format counts and first files are compared too
            every = {f: "x" for f in FORMAT_SINCE} | {"float8_e4m3fn": "y", "mxfp8": "x"}
            codes = {"x": "QC606", "y": "QC607"}
            assert formats_by_step(ck, None, every, codes) == formats_by_step(
                ck, merged, every, codes
            )
            assert sglang_config_class(ck) == _config_class_per_layer(ck)


def test_kinds_of_hands_out_the_held_grouping_only(tmp_path: Path) -> None:
    with load_checkpoint([str(_interleaved(tmp_path))]) as ck:
        assert layer_kinds.kinds_of(ck) is not layer_kinds.kinds_of(ck)  # none held: fresh
        held = layer_kinds.hold(ck)
        try:
            assert layer_kinds.kinds_of(ck) is held
            with load_checkpoint([str(_interleaved(tmp_path))]) as other:
                assert layer_kinds.kinds_of(other) is not held
        finally:
            layer_kinds.let_go(held)
        assert layer_kinds.kinds_of(ck) is not held


@pytest.mark.parametrize(
    "prefix",
    [
        "model.embed_tokens",
        "EMBED",
        "transformer.wte",
        "x.WTE.y",
        "tok_emb",
        "Token_Emb.proj",
        "emb",  # holds the quick test's "emb" but no embedding word
        "t_embedder",
        "embedding",
        "tok_embx",
        "wt",
        "blocks.0.attn.qkv",
        "",
        "ｅmbed",  # full-width letters: no match either way
    ],
)
def test_embedding_names_match_the_pattern(prefix: str) -> None:
    assert all("emb" in w or "wte" in w for w in layer_kinds.EMBEDDING_WORDS)
    want = re.search("|".join(layer_kinds.EMBEDDING_WORDS), prefix.lower()) is not None
    layer_kinds._EMBEDDING_NAMES.pop(prefix, None)
    assert layer_kinds.is_embedding_name(Layer(prefix)) is want
