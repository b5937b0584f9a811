"""The checkpoint model: inputs (file, files, folder, index), shards, layers, QC501-QC505."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hostile import marker_bytes, raw, tensors
from quantcheck.diagnostics import Severity
from quantcheck.model.checkpoint import InputError, load_checkpoint
from quantcheck.model.discover import as_one_spec
from quantcheck.model.layers import group_layers

A, B = "blocks.0.attn.to_q", "blocks.0.attn.to_k"


def fp8_layer(
    p: str, fmt: Any = "float8_e4m3fn", marker: dict[str, Any] | None = None
) -> list[tuple[Any, ...]]:
    m = marker if marker is not None else {"format": fmt}
    return [
        (f"{p}.weight", "F8_E4M3", [4, 4]),
        (f"{p}.weight_scale", "F32", []),
        (f"{p}.comfy_quant", "U8", [len(marker_bytes(m))], marker_bytes(m)),
    ]


def write(path: Path, specs: list[tuple[Any, ...]], metadata: dict[str, str] | None = None) -> Path:
    path.write_bytes(tensors(specs, metadata))
    return path


def write_index(folder: Path, weight_map: Any, name: str = "model.safetensors.index.json") -> Path:
    path = folder / name
    path.write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    return path


def sharded(folder: Path) -> dict[str, str]:
    """Two shards: layer A in part1, layer B in part2 (plus B's scale in part1)."""
    p1, p2 = "part1.safetensors", "part2.safetensors"
    b = fp8_layer(B)
    write(folder / p1, [*fp8_layer(A), b[1]])
    write(folder / p2, [b[0], b[2]])
    wmap = {
        f"{A}.weight": p1,
        f"{A}.weight_scale": p1,
        f"{A}.comfy_quant": p1,
        f"{B}.weight_scale": p1,
        f"{B}.weight": p2,
        f"{B}.comfy_quant": p2,
    }
    return wmap


def codes(ck: Any) -> list[str]:
    return sorted(d.code for d in ck.diagnostics)


# --------------------------------------------------------------------------- inputs


def test_single_file_as_str_and_list(tmp_path: Path) -> None:
    path = write(tmp_path / "m.safetensors", fp8_layer(A))
    for arg in (str(path), [str(path)]):
        with load_checkpoint(arg) as ck:
            assert ck.diagnostics == []
            assert ck.inputs == [str(path)] and len(ck.shards) == 1
            assert ck.shards[0].name == str(path) and ck.index is None
            assert list(ck.layers) == [A] and ck.layers[A].format == "float8_e4m3fn"


def test_several_files(tmp_path: Path) -> None:
    p1 = write(tmp_path / "a.safetensors", fp8_layer(A))
    p2 = write(tmp_path / "b.safetensors", fp8_layer(B, "nvfp4"))
    ck = load_checkpoint([str(p2), str(p1), str(p2)])  # a repeated path is read once
    assert [s.name for s in ck.shards] == [str(p2), str(p1)]
    assert ck.diagnostics == []
    assert {p: la.format for p, la in ck.layers.items()} == {A: "float8_e4m3fn", B: "nvfp4"}
    assert ck.tensors[f"{A}.weight"].file == str(p1)


def test_folder_reads_safetensors_in_sorted_order(tmp_path: Path) -> None:
    write(tmp_path / "z.safetensors", fp8_layer(B))
    write(tmp_path / "a.safetensors", fp8_layer(A))
    (tmp_path / "notes.txt").write_text("not a checkpoint")
    ck = load_checkpoint([str(tmp_path)])
    assert [os.path.basename(s.name) for s in ck.shards] == ["a.safetensors", "z.safetensors"]
    assert ck.diagnostics == [] and set(ck.layers) == {A, B}


def test_index_file(tmp_path: Path) -> None:
    idx = write_index(tmp_path, sharded(tmp_path))
    ck = load_checkpoint([str(idx)])
    assert ck.diagnostics == [], [(d.code, d.message) for d in ck.diagnostics]
    assert ck.index == str(idx)
    assert [os.path.basename(s.name) for s in ck.shards] == [
        "part1.safetensors",
        "part2.safetensors",
    ]
    # a layer split over two shards is still one layer
    assert set(ck.layers[B].tensors) == {"weight", "weight_scale", "comfy_quant"}
    assert ck.layers[B].tensors["weight"].file.endswith("part2.safetensors")
    assert ck.layers[B].tensors["weight_scale"].file.endswith("part1.safetensors")
    assert ck.layers[B].format == "float8_e4m3fn"


def test_folder_with_index_uses_the_index(tmp_path: Path) -> None:
    wmap = sharded(tmp_path)
    write(tmp_path / "stale-extra.safetensors", fp8_layer("stale"))  # not in the index
    idx = write_index(tmp_path, wmap)
    ck = load_checkpoint([str(tmp_path)])
    assert ck.index == str(idx)
    assert len(ck.shards) == 2 and "stale" not in ck.layers
    assert ck.diagnostics == []


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda d: [str(d / "missing.safetensors")], "no such file"),
        (lambda d: [str(d / "missing.safetensors.index.json")], "no such file"),
        (lambda d: [str(d)], "folder holds no .safetensors files"),
    ],
)
def test_input_errors(tmp_path: Path, make: Any, says: str) -> None:
    (tmp_path / "readme.md").write_text("x")
    with pytest.raises(InputError, match=says):
        load_checkpoint(make(tmp_path))


def test_empty_path_list_is_an_input_error() -> None:
    with pytest.raises(InputError):
        load_checkpoint([])


def test_unusable_shard_does_not_stop_the_others(tmp_path: Path) -> None:
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(raw(b"not json", pad=True))
    good = write(tmp_path / "good.safetensors", fp8_layer(A))
    ck = load_checkpoint([str(bad), str(good)])
    assert codes(ck) == ["QC105"]
    assert ck.diagnostics[0].file == str(bad)
    assert len(ck.shards) == 2 and list(ck.layers) == [A]


# --------------------------------------------------------------------------- layers


def test_group_layers_by_prefix_and_known_suffix(tmp_path: Path) -> None:
    specs = [
        ("blocks.0.attn.to_out.0.weight", "BF16", [2, 2]),
        ("blocks.0.attn.to_out.0.bias", "BF16", [2]),
        ("blocks.0.ff.weight_scale_2", "F32", []),
        ("blocks.0.ff.weight", "U8", [2, 1]),
        ("blocks.0.ff.input_scale", "F32", []),
        ("blocks.0.norm.running_mean", "F32", [2]),  # unknown suffix
        ("scaled_fp8", "F8_E4M3", [2]),  # no prefix
        ("pos_embed", "F32", [2]),
    ]
    ck = load_checkpoint([str(write(tmp_path / "m.safetensors", specs))])
    assert list(ck.layers) == ["blocks.0.attn.to_out.0", "blocks.0.ff"]
    assert set(ck.layers["blocks.0.ff"].tensors) == {"weight", "weight_scale_2", "input_scale"}
    assert ck.layers["blocks.0.attn.to_out.0"].has("bias")
    assert ck.loose == ["blocks.0.norm.running_mean", "scaled_fp8", "pos_embed"]
    assert ck.layers["blocks.0.ff"].marker is None and ck.layers["blocks.0.ff"].format is None


def test_group_layers_edge_names() -> None:
    layers, loose = group_layers({".weight": None, "weight": None, "a..weight": None})  # type: ignore[dict-item]
    assert list(layers) == ["a."] and loose == [".weight", "weight"]


def test_marker_without_weight_still_decoded(tmp_path: Path) -> None:
    m = marker_bytes({"format": "nvfp4"})
    ck = load_checkpoint(
        [str(write(tmp_path / "m.safetensors", [("x.comfy_quant", "U8", [len(m)], m)]))]
    )
    assert ck.markers["x"].format == "nvfp4" and ck.layers["x"].weight is None


def test_read_markers_false_skips_markers(tmp_path: Path) -> None:
    path = write(tmp_path / "m.safetensors", fp8_layer(A, marker={"format": 1, "x": [0]}))
    ck = load_checkpoint([str(path)], read_markers=False)
    assert ck.markers == {} and ck.layers[A].marker is None


# --------------------------------------------------------------------------- shards, index


def test_duplicate_tensor_across_shards(tmp_path: Path) -> None:
    p1 = write(tmp_path / "part1.safetensors", [(f"{A}.weight", "I8", [4, 4])])
    p2 = write(tmp_path / "part2.safetensors", [(f"{A}.weight", "BF16", [4, 4])])
    ck = load_checkpoint([str(p1), str(p2)])
    [d] = ck.diagnostics
    assert (d.code, d.tensor) == ("QC501", f"{A}.weight")
    assert "part1.safetensors" in d.message and "part2.safetensors" in d.message
    assert d.effective_severity is Severity.ERROR
    assert ck.tensors[f"{A}.weight"].dtype == "BF16"  # the last shard wins, like loaders


def test_marker_conflict_across_shards_tensor_vs_header(tmp_path: Path) -> None:
    p1 = write(tmp_path / "part1.safetensors", fp8_layer(A))
    p2 = write(
        tmp_path / "part2.safetensors",
        [("other.weight", "BF16", [2])],
        {"_quantization_metadata": json.dumps({"layers": {A: {"format": "nvfp4"}}})},
    )
    ck = load_checkpoint([str(p1), str(p2)])
    [d] = ck.diagnostics
    assert (d.code, d.layer) == ("QC210", A)
    assert '"float8_e4m3fn" in the marker tensor of' in d.message
    assert '"nvfp4" in the _quantization_metadata header of' in d.message
    assert "part1.safetensors" in d.message and "part2.safetensors" in d.message


def test_same_marker_tensor_in_two_shards_conflicting(tmp_path: Path) -> None:
    p1 = write(tmp_path / "part1.safetensors", fp8_layer(A))
    p2 = write(tmp_path / "part2.safetensors", fp8_layer(A, "float8_e5m2")[2:])
    ck = load_checkpoint([str(p1), str(p2)])
    assert codes(ck) == ["QC210", "QC501"]
    assert ck.markers[A].format == "float8_e5m2"


def test_loose_equality_across_shards(tmp_path: Path) -> None:
    m1 = {"format": "int8_tensorwise", "convrot": True}
    m2 = {"format": "int8_tensorwise", "convrot": 1}
    p1 = write(tmp_path / "part1.safetensors", fp8_layer(A, marker=m1))
    p2 = write(
        tmp_path / "part2.safetensors",
        [("x.weight", "BF16", [2])],
        {"_quantization_metadata": json.dumps({"layers": {A: m2}})},
    )
    ck = load_checkpoint([str(p1), str(p2)])
    [d] = ck.diagnostics
    assert d.code == "QC211" and "true" in d.message and " 1 in " in d.message


@pytest.mark.parametrize("escape", ["../outside.safetensors", "sub/../../outside.safetensors"])
def test_index_path_traversal_refused(tmp_path: Path, escape: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    outside = write(tmp_path / "outside.safetensors", fp8_layer(B))
    wmap = sharded(folder)
    wmap[f"{B}.weight"] = escape
    ck = load_checkpoint([str(write_index(folder, wmap))])
    d = next(d for d in ck.diagnostics if d.code == "QC502")
    assert repr(escape) in d.message and "leaves the index's folder" in d.message
    assert all(os.path.realpath(s.name) != str(outside.resolve()) for s in ck.shards)


def test_index_absolute_path_refused(tmp_path: Path) -> None:
    target = write(tmp_path / "abs.safetensors", fp8_layer(B))
    folder = tmp_path / "model"
    folder.mkdir()
    write(folder / "part1.safetensors", fp8_layer(A))
    ck = load_checkpoint(
        [str(write_index(folder, {f"{A}.weight": "part1.safetensors", f"{B}.weight": str(target)}))]
    )
    assert "QC502" in codes(ck)
    assert [os.path.basename(s.name) for s in ck.shards] == ["part1.safetensors"]


def test_index_shard_that_is_a_symlink_is_opened(tmp_path: Path) -> None:
    """A shard name is resolved by name within the index's folder: where that name is a
    symlink to is no reason to refuse it (a Hugging Face cache snapshot links every file
    into ../../blobs/, and a loader opens it). A `..` is refused even where it would stay
    inside by spelling: through a symlinked folder it leads wherever the link points."""
    folder = tmp_path / "model"
    folder.mkdir()
    (tmp_path / "elsewhere").mkdir()
    outside = write(tmp_path / "elsewhere" / "blob", fp8_layer(B))
    (tmp_path / "deep" / "er").mkdir(parents=True)
    write(tmp_path / "deep" / "secret.safetensors", fp8_layer(A))
    try:
        (folder / "link.safetensors").symlink_to(outside)
        (folder / "sub").symlink_to(tmp_path / "deep" / "er")
    except OSError:
        pytest.skip("symlinks not supported here")
    wmap = {n: "link.safetensors" for n in (f"{B}.weight", f"{B}.weight_scale", f"{B}.comfy_quant")}
    ck = load_checkpoint([str(write_index(folder, wmap))])
    assert codes(ck) == [] and [s.name for s in ck.shards] == [str(folder / "link.safetensors")]
    wmap[f"{A}.weight"] = "sub/../secret.safetensors"  # "secret.safetensors" by spelling only
    ck = load_checkpoint([str(write_index(folder, wmap))])
    assert codes(ck) == ["QC502"] and len(ck.shards) == 1


def test_index_missing_shard(tmp_path: Path) -> None:
    wmap = sharded(tmp_path)
    os.remove(tmp_path / "part2.safetensors")
    ck = load_checkpoint([str(write_index(tmp_path, wmap))])
    d = next(d for d in ck.diagnostics if d.code == "QC504")
    assert "'part2.safetensors' named by the index does not exist" in d.message
    assert [os.path.basename(s.name) for s in ck.shards] == ["part1.safetensors"]
    assert "QC505" not in codes(ck)  # tensors of a missing shard are not also "mismatched"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "index is not valid JSON"),
        ("[1, 2]", "index has no weight_map object"),
        ('{"metadata": {}}', "index has no weight_map object"),
        ('{"weight_map": {"a.weight": 3}}', "index has no weight_map object"),
        ('{"weight_map": {}}', "index has no weight_map object"),
        ('{"weight_map": ["a"]}', "index has no weight_map object"),
        ('{"weight_map": null}', "index has no weight_map object"),
        ("[" * 100_000 + "]" * 100_000, "index is not valid JSON"),
    ],
)
def test_index_invalid(tmp_path: Path, text: str, says: str) -> None:
    write(tmp_path / "part1.safetensors", fp8_layer(A))
    idx = tmp_path / "model.safetensors.index.json"
    idx.write_text(text)
    ck = load_checkpoint([str(idx)])
    [d] = ck.diagnostics
    assert d.code == "QC503" and says in d.message
    assert ck.shards == []


def test_index_weight_map_mismatch(tmp_path: Path) -> None:
    wmap = sharded(tmp_path)
    wmap[f"{A}.weight"] = "part2.safetensors"  # it is really in part1
    del wmap[f"{B}.comfy_quant"]  # present in part2 but not listed
    ck = load_checkpoint([str(write_index(tmp_path, wmap))])
    found = {(d.code, d.tensor): d for d in ck.diagnostics}
    assert set(found) == {("QC505", f"{A}.weight"), ("QC505", f"{B}.comfy_quant")}
    assert "places" in found["QC505", f"{A}.weight"].message
    assert "'part2.safetensors', which does not hold it" in found["QC505", f"{A}.weight"].message
    assert "missing from the index's weight_map" in found["QC505", f"{B}.comfy_quant"].message
    assert all(d.effective_severity is Severity.WARNING for d in ck.diagnostics)


def test_index_names_tensor_no_shard_holds(tmp_path: Path) -> None:
    wmap = sharded(tmp_path)
    wmap["ghost.weight"] = "part1.safetensors"
    ck = load_checkpoint([str(write_index(tmp_path, wmap))])
    [d] = ck.diagnostics
    assert (d.code, d.tensor) == ("QC505", "ghost.weight")


def test_resolving_orders_and_dedupes(tmp_path: Path) -> None:
    wmap = sharded(tmp_path)
    idx = write_index(tmp_path, wmap)
    spec = as_one_spec([str(idx), str(tmp_path / "part1.safetensors")])
    assert spec.index == str(idx) and spec.findings == []
    assert [os.path.basename(f) for f in spec.shards or []] == [
        "part1.safetensors",
        "part2.safetensors",
    ]
    assert spec.sizes == [os.path.getsize(f) for f in spec.shards or []]


# Name lists for the replayed layout: interleaved layers, unknown suffixes, no prefix, empty
# parts, a marker with no prefix, and one name.
NAME_LISTS = [
    [],
    ["weight"],
    [".weight", "weight", "a..weight", "a.", ".", ".comfy_quant", "x.comfy_quant"],
    ["a.weight", "b.weight", "a.weight_scale", "pos", "b.bias", "a.comfy_quant", "b.x"],
    ["a.b.c.weight", "a.b.weight", "a.b.c.input_scale", "a.b.c", "a.b.scaled_fp8", "scaled_fp8"],
    ["m.running_mean", "m.running_var", "n.weight_scale_2", "n.weight", "é.weight", "é.bias"],
]


@pytest.fixture
def layout_replay() -> Iterator[None]:
    """Layouts replayed, as while many checkpoints are checked."""
    from quantcheck.model.layers import shared_layout_replay

    shared_layout_replay(True)
    yield
    shared_layout_replay(False)


@pytest.mark.usefixtures("layout_replay")
@pytest.mark.parametrize("names", NAME_LISTS, ids=lambda n: f"{len(n)}-names")
def test_group_layers_replayed_layout_equals_name_by_name(names: list[str]) -> None:
    from quantcheck.model import layers as mod

    mod._last.clear()
    for round_ in range(4):  # first sight, second (the layout is kept), then replays
        # values are fresh objects per call, and not the key's name (the key is what counts)
        named: dict[str, Any] = {n: (round_, i) for i, n in enumerate(names)}
        got, loose = group_layers(named)
        want, want_loose = mod._group(named)
        assert loose == want_loose
        assert list(got) == list(want)
        for (p, la), lb in zip(got.items(), want.values(), strict=True):
            assert la.prefix == p == lb.prefix and la.marker is None
            assert list(la.tensors.items()) == list(lb.tensors.items())
            assert all(
                a is b for a, b in zip(la.tensors.values(), lb.tensors.values(), strict=True)
            )
        for la in got.values():  # results are fresh: changing one leaves the next intact
            la.tensors["zz"] = None  # type: ignore[assignment]
        loose.append("zz")
    assert mod._last and mod._last[0][1] is not None  # the layout was replayed


def test_group_layers_remembers_nothing_outside_many_checkpoints() -> None:
    from quantcheck.model import layers as mod

    for _ in range(3):
        assert group_layers({"a.weight": 1}) == mod._group({"a.weight": 1})  # type: ignore[arg-type, dict-item]
    assert mod._last == []


@pytest.mark.usefixtures("layout_replay")
def test_group_layers_other_names_are_grouped_anew() -> None:
    from quantcheck.model import layers as mod

    a = {"a.weight": 1, "a.bias": 2}
    b = {"a.weight": 1, "a.bias_x": 2}  # same length, another name
    for named in (a, a, a, b, a, b, b):
        got, loose = group_layers(named)  # type: ignore[arg-type]
        want, want_loose = mod._group(named)  # type: ignore[arg-type]
        assert (got, loose) == (want, want_loose)
    big = {f"l{i}.weight": i for i in range(mod.LAYOUT_MAX_NAMES + 1)}
    assert group_layers(big) == mod._group(big)  # type: ignore[arg-type]
    assert len(mod._last[0][0]) <= mod.LAYOUT_MAX_NAMES  # a long list is never remembered
