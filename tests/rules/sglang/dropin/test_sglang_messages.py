"""sglang 0.5.23 message templates and rules (sglang-messages.md) on small generated files.

The reference cases already hit most §2.1 templates; these tests cover the rest of §2.1–§2.4
and §7, the two seed records, and the merge, ordering and decoding rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from quantcheck.compat.sglang import (
    Host,
    SafetensorError,
    check_config_constructor,
    inspect_comfy_quant_markers,
    resolve_comfy_checkpoint_quantization,
    simulate_load,
)

from ._st_writer import Tensor, comfy_marker, raw_file, write

CONVROT = {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 16}


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _int8(prefix: str, marker: Any = CONVROT, w: Any = ("I8", [8, 32]), s: Any = ("F32", [8, 1])):
    tensors: list[Tensor] = [(f"{prefix}.weight", *w), (f"{prefix}.weight_scale", *s)]
    if marker is not None:
        tensors.append(comfy_marker(prefix, marker))
    return tensors


def _w4a8(prefix: str, marker: Any, w=("I8", [8, 16]), rel=("F8_E4M3", [8, 2]), ch=("F32", [8])):
    return [
        (f"{prefix}.weight", *w),
        (f"{prefix}.weight_s_rel", *rel),
        (f"{prefix}.weight_s_channel", *ch),
        comfy_marker(prefix, marker),
    ]


def _w4a4(prefix: str, marker: Any, w=("I8", [8, 32]), s=("F32", [8])) -> list[Tensor]:
    return [(f"{prefix}.weight", *w), (f"{prefix}.weight_scale", *s), comfy_marker(prefix, marker)]


def _raises(exc_type: type[BaseException], message: str, files: list[Any], mapper=None) -> None:
    with pytest.raises(exc_type) as info:
        inspect_comfy_quant_markers(files, mapper)
    assert type(info.value) is exc_type
    assert str(info.value) == message


def _one(here: Path, tensors: list[Tensor], metadata: dict[str, str] | None = None) -> str:
    write(here / "m.safetensors", tensors, metadata)
    return "m.safetensors"


# --- seed records -----------------------------------------------------------------------------


def test_seed_int8_needs_i8_and_f32(here: Path) -> None:
    f = _one(here, _int8("blocks.0.attn.qkv", w=("BF16", [8, 32]), s=("F16", [8, 1])))
    msg = "Comfy INT8 layer 'blocks.0.attn.qkv' needs I8 weights and F32 scales, got BF16 and F16"
    _raises(ValueError, msg, [f])


def test_seed_w4a8_needs_f32_channel_scales(here: Path) -> None:
    marker = {"format": "asym_w4a8_int8", "convrot": True}
    f = _one(here, _w4a8("blocks.0.mlp.fc1", marker, ch=("BF16", [8])))
    _raises(
        ValueError, "Comfy W4A8 layer 'blocks.0.mlp.fc1' needs F32 channel scales, got BF16", [f]
    )


# --- §2.1 details -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "shown"),
    [
        ("é", "'é.comfy_quant'"),
        ("zw\u200bsp", "'zw\\u200bsp.comfy_quant'"),
        ("it's.x", '"it\'s.x.comfy_quant"'),
        ("both'\"", "'both\\'\".comfy_quant'"),
    ],
)
def test_repr_of_names(here: Path, prefix: str, shown: str) -> None:
    f = _one(here, [comfy_marker(prefix, b"[1]")])
    _raises(ValueError, f"Comfy quantization marker {shown} must contain a JSON object", [f])


@pytest.mark.parametrize("path_form", ["./m.safetensors", "../{dir}/m.safetensors", "path"])
def test_path_printed_as_passed(here: Path, path_form: str) -> None:
    _one(here, [comfy_marker("a", b"{")])
    arg: Any = Path("./m.safetensors") if path_form == "path" else path_form
    if "{dir}" in path_form:
        arg = path_form.format(dir=here.name)
    shown = "m.safetensors" if path_form == "path" else arg
    _raises(ValueError, f"Invalid Comfy quantization marker 'a.comfy_quant' in {shown}", [arg])


@pytest.mark.parametrize("raw", ["", "[]", "{", '{"layers": 1,}', "\ufeff{}"])
def test_header_invalid_json(here: Path, raw: str) -> None:
    f = _one(here, [], {"_quantization_metadata": raw})
    if raw == "[]":
        _raises(ValueError, f"_quantization_metadata in {f} must contain an object", [f])
    else:
        _raises(ValueError, f"Invalid _quantization_metadata in {f}", [f])


@pytest.mark.parametrize("raw", ["{}", '{"layers": []}', '{"layers": null}', '{"quant_algo": 1}'])
def test_header_layers_object(here: Path, raw: str) -> None:
    f = _one(here, [], {"_quantization_metadata": raw})
    _raises(ValueError, f"_quantization_metadata in {f} must contain a layers object", [f])


@pytest.mark.parametrize("value", ["null", "[]", "1", '"x"'])
def test_header_layer_not_object(here: Path, value: str) -> None:
    raw = '{"layers": {"ok": {}, "p.q": ' + value + "}}"
    f = _one(here, [], {"_quantization_metadata": raw})
    _raises(ValueError, "Comfy quantization metadata for 'p.q' must be an object", [f])


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x00\x00\x00\x00",
        b'{"format":"x"}\x00\x00',
        b'{"a":1,}',
        b"{'a':1}",
        b'{"a":1} // c',
        b'{"a":"\x01"}',
        b'{"a":"\xff"}',
        b"\xef\xbb\xbf\xef\xbb\xbf{}",
    ],
)
def test_marker_invalid(here: Path, payload: bytes) -> None:
    f = _one(here, [comfy_marker("a", payload)])
    _raises(ValueError, f"Invalid Comfy quantization marker 'a.comfy_quant' in {f}", [f])


@pytest.mark.parametrize("payload", [b"[]", b"null", b"1", b'"s"', b"NaN"])
def test_marker_not_object(here: Path, payload: bytes) -> None:
    f = _one(here, [comfy_marker("a", payload)])
    _raises(ValueError, "Comfy quantization marker 'a.comfy_quant' must contain a JSON object", [f])


def test_missing_tensors_lists_sorted_names(here: Path) -> None:
    f = _one(here, [comfy_marker("n", {"format": "nvfp4"}), ("n.weight", "U8", [8, 8])])
    msg = "Comfy layer 'n' is missing checkpoint tensors: ['n.weight_scale', 'n.weight_scale_2']"
    _raises(ValueError, msg, [f])


def test_w4a8_requires_s_rel_and_s_channel(here: Path) -> None:
    f = _one(here, [comfy_marker("w", {"format": "asym_w4a8_int8"}), ("w.weight", "I8", [8, 16])])
    msg = "Comfy layer 'w' is missing checkpoint tensors: ['w.weight_s_channel', 'w.weight_s_rel']"
    _raises(ValueError, msg, [f])


def test_zero_d_weight_gives_template_not_index_error(here: Path) -> None:
    f = _one(here, _int8("p", w=("I8", []), s=("F32", [8, 1])))
    _raises(
        ValueError, "Comfy INT8 layer 'p' has incompatible weight/scale shapes: () and (8, 1)", [f]
    )


def test_mapper_collision_prints_repr_of_result(here: Path) -> None:
    f = _one(here, _int8("a") + _int8("b"))
    _raises(ValueError, "Comfy markers collide after parameter mapping at 1", [f], lambda p: 1)


def test_mapper_exception_propagates(here: Path) -> None:
    def mapper(prefix: str) -> str:
        raise KeyError(prefix)

    _raises(KeyError, "'a'", [_one(here, _int8("a"))], mapper)


def test_falsy_mapper_is_not_called(here: Path) -> None:
    class Falsy:
        def __bool__(self) -> bool:
            return False

        def __call__(self, prefix: str) -> str:
            raise AssertionError("called")

    assert list(inspect_comfy_quant_markers([_one(here, _int8("a"))], Falsy())) == ["a"]


def test_empty_file_list() -> None:
    assert inspect_comfy_quant_markers([]) == {}


# --- §2.2 marker dtypes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "shape", "exc_type", "message"),
    [
        ("BF16", [8], TypeError, "Got unsupported ScalarType BFloat16"),
        ("F8_E4M3", [16], TypeError, "Got unsupported ScalarType Float8_e4m3fn"),
        ("F8_E5M2", [16], TypeError, "Got unsupported ScalarType Float8_e5m2"),
        ("F8_E8M0", [16], TypeError, "Got unsupported ScalarType Float8_e8m0fnu"),
        ("F8_E4M3FNUZ", [16], TypeError, "Got unsupported ScalarType Float8_e4m3fnuz"),
        ("F8_E5M2FNUZ", [16], TypeError, "Got unsupported ScalarType Float8_e5m2fnuz"),
        ("F4", [32], TypeError, "Got unsupported ScalarType Float4_e2m1fn_x2"),
        ("F6_E2M3", [4], SafetensorError, "Dtype not understood: F6_E2M3"),
        ("F6_E3M2", [4], SafetensorError, "Dtype not understood: F6_E3M2"),
        (
            "F4",
            [2, 3],
            SafetensorError,
            "f4_x2 dtype requires that the last dim be divisible by 2 in torch: got [2, 3]",
        ),
    ],
)
def test_marker_dtype_rejected(
    here: Path, dtype: str, shape: list[int], exc_type: type[Exception], message: str
) -> None:
    size = math.prod(shape) * {"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}.get(dtype, 16) // 8
    if dtype.startswith("F8"):
        size = math.prod(shape)
    f = _one(here, [("a.comfy_quant", dtype, shape, b"{}".ljust(size, b" "))])
    _raises(exc_type, message, [f])


@pytest.mark.parametrize(
    ("dtype", "shape"),
    [
        ("BOOL", [16]),
        ("BOOL", [4, 4]),
        ("U8", [2, 2, 4]),
        ("I8", [16]),
        ("I16", [8]),
        ("U16", [8]),
        ("F16", [2, 4]),
        ("I32", [4]),
        ("U32", [4]),
        ("F32", [4]),
        ("F64", [2]),
        ("I64", [2]),
        ("U64", [2]),
        ("C64", [2]),
    ],
)
def test_marker_dtype_raw_bytes(here: Path, dtype: str, shape: list[int]) -> None:
    payload = b'{"format":"awq"}'  # 16 bytes, not valid as numbers of most dtypes
    f = _one(here, [("a.comfy_quant", dtype, shape, payload)])
    assert inspect_comfy_quant_markers([f]) == {"a": {"format": "awq"}}


def test_marker_zero_d_raw_bytes(here: Path) -> None:
    f = _one(here, [("a.comfy_quant", "F64", [], b'{"x":1} ')])
    assert inspect_comfy_quant_markers([f]) == {"a": {"x": 1}}


def test_only_marker_tensors_are_read(here: Path) -> None:
    tensors: list[Tensor] = [("x.weight", "F6_E2M3", [4]), ("y", "BF16", [2])]
    f = _one(here, [*tensors, comfy_marker("x", {"format": "awq_w4a16"})])
    assert inspect_comfy_quant_markers([f]) == {"x": {"format": "awq_w4a16"}}


# --- §2.2 int() ---------------------------------------------------------------------------------

_INT_ERRORS = [
    (None, TypeError, "int() argument must be a string, a bytes-like object or a real number, "
     "not 'NoneType'"),
    ([16], TypeError, "int() argument must be a string, a bytes-like object or a real number, "
     "not 'list'"),
    ({"a": 1}, TypeError, "int() argument must be a string, a bytes-like object or a real "
     "number, not 'dict'"),
    ("", ValueError, "invalid literal for int() with base 10: ''"),
    ("16.0", ValueError, "invalid literal for int() with base 10: '16.0'"),
    (float("nan"), ValueError, "cannot convert float NaN to integer"),
    (float("-inf"), OverflowError, "cannot convert float infinity to integer"),
]  # fmt: skip


@pytest.mark.parametrize(("value", "exc_type", "message"), _INT_ERRORS)
def test_w4a8_group_size_int_errors(
    here: Path, value: Any, exc_type: type[Exception], message: str
) -> None:
    f = _one(here, _w4a8("w", {"format": "asym_w4a8_int8", "group_size": value}))
    _raises(exc_type, message, [f])


@pytest.mark.parametrize(("value", "exc_type", "message"), _INT_ERRORS)
def test_w4a4_groupsize_int_errors(
    here: Path, value: Any, exc_type: type[Exception], message: str
) -> None:
    f = _one(here, _w4a4("w", {"format": "convrot_w4a4", "convrot_groupsize": value}))
    _raises(exc_type, message, [f])


def test_int_overflowing_literal(here: Path) -> None:
    marker = b'{"format":"asym_w4a8_int8","group_size":1e400}'
    f = _one(here, _w4a8("w", marker))
    _raises(OverflowError, "cannot convert float infinity to integer", [f])


def test_int_conversions_accepted(here: Path) -> None:
    files = []
    for i, value in enumerate([" 16 ", "1_6", "+16", "١٦", 16.9, True]):
        gs = 16 if value is not True else 1
        marker = {"format": "asym_w4a8_int8", "convrot": True, "group_size": value}
        path = here / f"f{i}.safetensors"
        write(path, _w4a8(f"p{i}", marker, rel=("F8_E4M3", [8, 32 // gs])))
        files.append(path.name)
    # True -> 1 -> "invalid group_size=1"; everything else converts to 16.
    _raises(ValueError, "Comfy W4A8 layer 'p5' has invalid group_size=1", files)
    out = inspect_comfy_quant_markers(files[:5])
    assert list(out) == ["p0", "p1", "p2", "p3", "p4"]


def test_w4a4_int_comes_after_dtype_checks(here: Path) -> None:
    marker = {"format": "convrot_w4a4", "convrot_groupsize": None}
    f = _one(here, _w4a4("w", marker, s=("F32", [8, 1])))
    _raises(
        ValueError,
        "Comfy W4A4 layer 'w' has incompatible weight/scale shapes: (8, 32) and (8, 1)",
        [f],
    )


# --- §2.2 decoder escapes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("opener", "closer", "kind"), [("[", "]", "array"), ('{"a":', "}", "object")]
)
def test_marker_recursion_error(here: Path, opener: str, closer: str, kind: str) -> None:
    payload = (opener * 100_000 + closer * 100_000).encode()
    f = _one(here, [comfy_marker("a", payload)])
    msg = f"maximum recursion depth exceeded while decoding a JSON {kind} from a unicode string"
    _raises(RecursionError, msg, [f])


def test_header_recursion_error(here: Path) -> None:
    f = _one(here, [], {"_quantization_metadata": "[" * 100_000 + "]" * 100_000})
    msg = "maximum recursion depth exceeded while decoding a JSON array from a unicode string"
    _raises(RecursionError, msg, [f])


def test_header_big_int(here: Path) -> None:
    f = _one(here, [], {"_quantization_metadata": "1" * 4301})
    msg = (
        "Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits; "
        "use sys.set_int_max_str_digits() to increase the limit"
    )
    _raises(ValueError, msg, [f])


# --- §2.3 reader failures (type pinned) ---------------------------------------------------------


def test_reader_missing_file_and_directory(here: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"No such file or directory: nope\.safetensors"):
        inspect_comfy_quant_markers(["nope.safetensors"])
    (here / "d").mkdir()
    with pytest.raises(OSError, match=r"No such device \(os error 19\)"):
        inspect_comfy_quant_markers(["d"])


@pytest.mark.parametrize(
    ("header", "data", "fragment"),
    [
        (None, b"", "header too small"),
        (b"{}", b"", None),
        (b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"xy", "not fully covered"),
        (b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"xy", "invalid offset"),
        (b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,1]}}', b"x", "invalid shape"),
        (b'{"\xff":1}', b"", "invalid UTF-8 in header"),
        (b'{"a":{"dtype":"X8","shape":[1],"data_offsets":[0,1]}}', b"x", "invalid JSON in header"),
        (b'{"__metadata__":{"a":1}}', b"", "invalid JSON in header"),
    ],
)
def test_reader_refusals(
    here: Path, header: bytes | None, data: bytes, fragment: str | None
) -> None:
    path = here / "bad.safetensors"
    if header is None:
        path.write_bytes(b"\x01\x02")
    else:
        raw_file(path, header, data)
    if fragment is None:  # valid, empty
        assert inspect_comfy_quant_markers([path.name]) == {}
        path.write_bytes(b"\x00\xe2\xf5\x05\0\0\0\0{}")  # 100_000_256
        fragment = "header too large"
    with pytest.raises(SafetensorError, match=fragment):
        inspect_comfy_quant_markers([path.name])


def test_reader_error_comes_after_previous_file(here: Path) -> None:
    first = _one(here, [comfy_marker("a", b"{")])
    raw_file(here / "bad.safetensors", b"[]")
    _raises(
        ValueError,
        f"Invalid Comfy quantization marker 'a.comfy_quant' in {first}",
        [first, "bad.safetensors"],
    )
    with pytest.raises(SafetensorError):
        inspect_comfy_quant_markers([_one(here, _int8("a", w=("BF16", [1]))), "bad.safetensors"])


def test_duplicate_names_in_one_header_last_wins(here: Path) -> None:
    header = (
        b'{"a.weight":{"dtype":"I8","shape":[8,32],"data_offsets":[0,0]},'
        b'"a.weight":{"dtype":"BF16","shape":[0],"data_offsets":[0,0]}}'
    )
    raw_file(here / "dup.safetensors", header)
    assert inspect_comfy_quant_markers(["dup.safetensors"]) == {}


# --- §2.4 resolver ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("formats", "text"),
    [
        ([None, "nvfp4"], "None, nvfp4"),
        (["NVFP4", "awq"], "NVFP4, awq"),
        (["nvfp4", "mxfp8"], "mxfp8, nvfp4"),
        ([True], "True"),
        ([1.5], "1.5"),
        ([["nvfp4"]], "['nvfp4']"),
        ([{"a": 1}], "{'a': 1}"),
        (["convrot_w4a4", "asym_w4a8_int8"], "asym_w4a8_int8, convrot_w4a4"),
        (["float8_e4m3fn", "nvfp4", "int8_tensorwise"], "float8_e4m3fn, int8_tensorwise, nvfp4"),
    ],
)
def test_resolver_unsupported(formats: list[Any], text: str) -> None:
    markers = {f"p{i}": ({} if f is None else {"format": f}) for i, f in enumerate(formats)}
    with pytest.raises(NotImplementedError) as info:
        resolve_comfy_checkpoint_quantization(markers)
    assert str(info.value) == f"Unsupported Comfy quantization format(s): {text}"


@pytest.mark.parametrize(
    ("formats", "config_class"),
    [
        (["int8_tensorwise"], "ConvRotInt8Config"),
        (["asym_w4a8_int8", "int8_tensorwise"], "KitchenW4A8Config"),
        (["convrot_w4a4", "int8_tensorwise"], "KitchenW4A4Config"),
        (["int8_tensorwise", "nvfp4", "nvfp4"], "ComfyNvfp4Config"),
        (["mxfp8"], "MXFP8Config"),
    ],
)
def test_resolver_dispatch(formats: list[str], config_class: str) -> None:
    markers = {f"p{i}": {"format": f} for i, f in enumerate(formats)}
    assert resolve_comfy_checkpoint_quantization(markers) == config_class
    assert resolve_comfy_checkpoint_quantization({}) is None
    assert resolve_comfy_checkpoint_quantization(None) is None


# --- §7 constructors --------------------------------------------------------------------------

_W4A8 = {"format": "asym_w4a8_int8", "convrot": True}
_W4A4 = {"format": "convrot_w4a4"}
_EMB = {"format": "int8_tensorwise", "_is_rowwise": True}


@pytest.mark.parametrize(
    ("config_class", "markers", "kwargs", "message"),
    [
        ("ConvRotInt8Config", {"p": CONVROT}, {"convrot_int8_backend": "cuda"},
         "convrot_int8 backend must be one of ('auto', 'comfy_kitchen', 'jit'), got 'cuda'"),
        ("ConvRotInt8Config", {"p": {"format": "nvfp4"}}, {},
         "Unsupported Comfy INT8 format for 'p': 'nvfp4'"),
        ("ConvRotInt8Config", {"p": {**CONVROT, "convrot": "yes"}}, {},
         "Serialized convrot_int8 layer 'p' must set convrot=true"),
        ("ConvRotInt8Config", {"p": {**CONVROT, "convrot_groupsize": 32}}, {},
         "Serialized convrot_int8 layer 'p' must declare convrot_groupsize in (16, 64, 256), "
         "got 32"),
        ("KitchenW4A8Config", {"p": _W4A8}, {"host": Host("mps")},
         "Serialized W4A8 checkpoints are not supported on MPS"),
        ("KitchenW4A8Config", {"p": _W4A8}, {"host": Host("cuda", 75)},
         "Serialized W4A8 checkpoints require CUDA compute capability >= 8.0; got 7.5"),
        ("KitchenW4A8Config", {"p": {**_W4A8, "convrot": 1}}, {},
         "Serialized W4A8 layer 'p' must set convrot=true"),
        ("KitchenW4A4Config", {"p": _W4A4}, {"host": Host("mps")},
         "Serialized W4A4 checkpoints are not supported on MPS"),
        ("KitchenW4A4Config", {"p": _W4A4}, {"host": Host("cuda", 70)},
         "Serialized W4A4 checkpoints require CUDA compute capability >= 7.5; got 7.0"),
        ("KitchenW4A4Config", {"z": _W4A4, "a": {**CONVROT, "convrot": 1}}, {},
         "Serialized convrot_int8 layer 'a' must set convrot=true"),
        ("KitchenW4A4Config", {"p": {"format": "nvfp4"}}, {},
         "Unsupported Comfy W4A4 format for 'p': 'nvfp4'"),
        ("KitchenW4A4Config", {"p": {**_W4A4, "convrot_groupsize": "32"}}, {},
         "Serialized W4A4 layer 'p' has unsupported convrot_groupsize=32; "
         "expected one of (16, 64, 256)"),
        ("KitchenW4A4Config", {"p": {**_W4A4, "linear_dtype": None}}, {},
         "Serialized W4A4 layer 'p' has unsupported linear_dtype='None'; "
         "expected one of ('int4', 'int8')"),
        ("ComfyFp8Config", {"a": {"format": "float8_e4m3fn"}, "b": {"format": "nvfp4"}, "c": {}},
         {}, "Unsupported Comfy FP8 layer formats: {'b': 'nvfp4', 'c': None}"),
        ("ComfyNvfp4Config", {"e": _EMB, "p": {"format": "nvfp4", "convrot": 1}}, {},
         "Rotated NVFP4 weights are not supported: 'p'"),
        ("MXFP8Config", {"p": {"format": "mxfp8"}}, {"host": Host("mps")},
         "MXFP8 is not supported on MPS"),
    ],
)  # fmt: skip
def test_constructor_messages(
    config_class: str, markers: dict[str, Any], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        check_config_constructor(config_class, markers, **kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("config_class", "markers", "kwargs"),
    [
        ("ConvRotInt8Config", {"e": _EMB, "p": {**CONVROT, "convrot_groupsize": 16.0}}, {}),
        ("ConvRotInt8Config", {"e": {**_EMB, "convrot": 0}}, {"convrot_int8_backend": "jit"}),
        ("KitchenW4A8Config", {"e": _EMB, "p": _W4A8}, {"host": Host("cuda", 80)}),
        ("KitchenW4A8Config", {"p": _W4A8}, {"host": Host("cuda", None)}),
        ("KitchenW4A4Config", {"p": {**_W4A4, "linear_dtype": "int8"}}, {"host": Host("cuda", 75)}),
        ("ComfyNvfp4Config", {"e": _EMB, "p": {"format": "nvfp4", "convrot": False}}, {}),
        ("MXFP8Config", {"p": {"format": "mxfp8"}}, {"host": Host("cuda", 70)}),
    ],
)
def test_constructor_accepts(
    config_class: str, markers: dict[str, Any], kwargs: dict[str, Any]
) -> None:
    check_config_constructor(config_class, markers, **kwargs)


# --- §3 ordering, §5 merging and derived keys ---------------------------------------------------


def test_two_shard_order_and_field_order(here: Path) -> None:
    header = '{"layers": {"z": {"format": "float8_e4m3fn", "_x": 1}, "c": {"a": 1}}}'
    one = [
        comfy_marker("c", {"b": 2, "format": "float8_e4m3fn"}),
        comfy_marker("a", {"format": "awq"}),
    ]
    write(
        here / "1.safetensors",
        [*one, ("z.weight", "F8_E4M3", [2]), ("z.weight_scale", "F32", [])],
        {"_quantization_metadata": header},
    )
    write(
        here / "2.safetensors",
        [
            comfy_marker("b", {"format": "awq"}),
            ("z.input_scale", "F32", []),
            ("c.weight", "BF16", [1]),
            ("c.weight_scale", "F32", []),
        ],
    )
    out = inspect_comfy_quant_markers(["1.safetensors", "2.safetensors"])
    assert list(out) == ["z", "c", "a", "b"]
    assert list(out["z"].items()) == [
        ("format", "float8_e4m3fn"),
        ("_x", 1),
        ("_activation_scheme", "static"),
    ]
    assert list(out["c"].items()) == [("a", 1), ("b", 2), ("format", "float8_e4m3fn"),
                                      ("_activation_scheme", "dynamic")]  # fmt: skip


@pytest.mark.parametrize(
    ("first", "second", "result"),
    [
        ("true", "1", 1),
        ("1", "true", True),
        ("16", "16.0", 16.0),
        ("0", "-0.0", -0.0),
        ("[1]", "[1.0]", [1.0]),
        ("[NaN]", "[NaN]", None),
        ("Infinity", "Infinity", math.inf),
        ('"16"', "16", "conflict"),
        ("null", "0", "conflict"),
        ("[]", "{}", "conflict"),
        ("NaN", "NaN", "conflict"),
    ],
)
def test_merge_equality(here: Path, first: str, second: str, result: Any) -> None:
    header = '{"layers": {"p": {"format": "awq", "v": ' + first + "}}}"
    f = _one(
        here,
        [comfy_marker("p", b'{"v": %s}' % second.encode())],
        {"_quantization_metadata": header},
    )
    if result == "conflict":
        _raises(ValueError, "Conflicting Comfy quantization markers for 'p'", [f])
        return
    value = inspect_comfy_quant_markers([f])["p"]["v"]
    if result is None:
        assert math.isnan(value[0])
    else:
        assert repr(value) == repr(result)


def test_duplicate_keys_inside_marker(here: Path) -> None:
    f = _one(here, [comfy_marker("p", b'{"format":"x","v":1,"format":"awq"}')])
    assert list(inspect_comfy_quant_markers([f])["p"].items()) == [("format", "awq"), ("v", 1)]


def test_derived_keys_overwrite_and_survive(here: Path) -> None:
    w4a8 = {"format": "asym_w4a8_int8", "_has_codebook": True, "_y": "keep"}
    tensors = [
        *_w4a8("w", w4a8),
        *_w4a4("x", {"format": "convrot_w4a4", "convrot_groupsize": 16, "_is_rowwise": True}),
        comfy_marker("f", {"_activation_scheme": "static", "format": "float8_e4m3fn"}),
        ("f.weight", "F8_E4M3", [1]), ("f.weight_scale", "F32", []),
        comfy_marker("k", {"format": "awq_w4a16", "_has_codebook": "yes"}),
        *_int8("i", {"format": "int8_tensorwise", "_is_rowwise": False}, s=("F32", [])),
    ]  # fmt: skip
    out = inspect_comfy_quant_markers([_one(here, tensors)])
    assert out["w"] == {**w4a8, "_has_codebook": False, "_has_correction": False}
    assert list(out["w"]) == ["format", "_has_codebook", "_y", "_has_correction"]
    assert out["x"] == {"format": "convrot_w4a4", "convrot_groupsize": 16, "_is_rowwise": True}
    assert list(out["f"].items()) == [
        ("_activation_scheme", "dynamic"),
        ("format", "float8_e4m3fn"),
    ]
    assert out["k"] == {"format": "awq_w4a16", "_has_codebook": "yes"}
    assert out["i"] == {
        "format": "int8_tensorwise",
        "_is_rowwise": False,
        "_is_tensorwise_scalar": True,
    }
    assert out["i"]["_is_tensorwise_scalar"] is True


def test_error_order_file2_json_beats_file1_shape(here: Path) -> None:
    write(here / "1.safetensors", _int8("a", s=("F32", [8])))
    write(here / "2.safetensors", [comfy_marker("b", b"{")])
    msg = "Invalid Comfy quantization marker 'b.comfy_quant' in 2.safetensors"
    _raises(ValueError, msg, ["1.safetensors", "2.safetensors"])


def test_missing_markers_beat_layer_errors(here: Path) -> None:
    f = _one(here, [*_int8("a", s=("F32", [8])), ("b.weight", "U8", [1])])
    _raises(ValueError, "Quantized weights are missing comfy_quant metadata: ['b']", [f])


def test_cross_shard_noted_weight_checked_with_last_meta(here: Path) -> None:
    write(here / "1.safetensors", [("a.weight", "I8", [8, 32])])
    write(here / "2.safetensors", [("a.weight", "BF16", [8, 32]), ("a.weight_scale", "F32", [8, 1]),
                                   comfy_marker("a", CONVROT)])  # fmt: skip
    msg = "Comfy INT8 layer 'a' needs I8 weights and F32 scales, got BF16 and F32"
    _raises(ValueError, msg, ["1.safetensors", "2.safetensors"])


# --- §3.4 / §1.B MXFP8 synthesis --------------------------------------------------------------


def _mx(prefix: str, k: int = 64, scale: Any = "U8") -> list[Tensor]:
    return [
        (f"{prefix}.weight", "F8_E4M3", [8, k]),
        (f"{prefix}.weight_scale", scale, [8, k // 32]),
    ]


def test_mxfp8_synthesized_in_sorted_order(here: Path) -> None:
    tensors = [*_mx("b"), *_mx("a"), *_mx("c"), comfy_marker("b", {"format": "mxfp8", "x": 1})]
    f = _one(here, tensors, {"quant_format": "MXFP8"})
    out = inspect_comfy_quant_markers([f])
    assert list(out.items()) == [("b", {"format": "mxfp8", "x": 1}), ("a", {"format": "mxfp8"}),
                                 ("c", {"format": "mxfp8"})]  # fmt: skip
    assert simulate_load([f]).config_class == "MXFP8Config"


@pytest.mark.parametrize("other", ["mxfp8 ", "nvfp4"])
def test_mxfp8_disabled_by_other_quant_format(here: Path, other: str) -> None:
    write(here / "1.safetensors", _mx("a"), {"quant_format": "mxfp8"})
    write(here / "2.safetensors", [("z", "U8", [1])], {"quant_format": other})
    _raises(ValueError, "Quantized weights are missing comfy_quant metadata: ['a']",
            ["1.safetensors", "2.safetensors"])  # fmt: skip


def test_mxfp8_checks_marked_layers_and_reports_smallest(here: Path) -> None:
    tensors = [*_mx("b", 48), *_int8("a"), *_mx("c")]
    f = _one(here, tensors, {"quant_format": "mxfp8"})
    msg = (
        "MXFP8 layer 'a' has incompatible weight/scale metadata: "
        "('I8', (8, 32)) and ('F32', (8, 1))"
    )
    _raises(ValueError, msg, [f])


# --- simulate_load ------------------------------------------------------------------------------


def test_simulate_load_stages(here: Path) -> None:
    ok = _one(here, _int8("a"))
    outcome = simulate_load([ok])
    assert (outcome.ok, outcome.stage, outcome.config_class) == (
        True,
        "constructor",
        "ConvRotInt8Config",
    )
    assert outcome.markers == {"a": {**CONVROT, "_is_rowwise": True}}
    write(here / "none.safetensors", [("x", "F32", [1])])
    assert simulate_load(["none.safetensors"]) == simulate_load([]) == simulate_load([], None)
    assert simulate_load([]).stage == "resolver" and simulate_load([]).ok
    bad = simulate_load(["missing.safetensors"])
    assert (bad.ok, bad.stage, bad.error_type) == (False, "inspector", "FileNotFoundError")
    backend = simulate_load([ok], convrot_int8_backend="x")
    assert (backend.stage, backend.error_type, backend.config_class) == (
        "constructor", "ValueError", "ConvRotInt8Config")  # fmt: skip


def test_simulate_load_uses_mapper(here: Path) -> None:
    f = _one(here, _int8("model.diffusion_model.a"))
    mapper: Callable[[str], str] = lambda p: p.removeprefix("model.diffusion_model.")  # noqa: E731
    assert list(simulate_load([f], mapper).markers or {}) == ["a"]


# --- §4 marker decoding -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        '{"format":"awq"}'.encode("utf-16"),
        '{"format":"awq"}'.encode("utf-16-le"),
        '{"format":"awq"}'.encode("utf-16-be"),
        '{"format":"awq"}'.encode("utf-32"),
        '{"format":"awq"}'.encode("utf-32-le"),
        '{"format":"awq"}'.encode("utf-32-be"),
        b'\xef\xbb\xbf{"format":"awq"}',
        b' \t\r\n{"format":"awq"}\n',
    ],
)
def test_marker_encodings_accepted(here: Path, payload: bytes) -> None:
    f = _one(here, [comfy_marker("a", payload)])
    assert inspect_comfy_quant_markers([f]) == {"a": {"format": "awq"}}


def test_marker_lone_surrogate_accepted(here: Path) -> None:
    f = _one(here, [comfy_marker("a", b'{"format":"awq","s":"\xed\xa0\x80"}')])
    assert inspect_comfy_quant_markers([f])["a"]["s"] == "\ud800"


@pytest.mark.parametrize("payload", [b"1\x00", b"\x001", b"\xa0{}"])
def test_marker_short_and_odd_encodings(here: Path, payload: bytes) -> None:
    f = _one(here, [comfy_marker("a", payload)])
    with pytest.raises(ValueError) as info:
        inspect_comfy_quant_markers([f])
    message = str(info.value)
    if payload == b"\xa0{}":
        assert message == f"Invalid Comfy quantization marker 'a.comfy_quant' in {f}"
    else:
        assert message == "Comfy quantization marker 'a.comfy_quant' must contain a JSON object"
