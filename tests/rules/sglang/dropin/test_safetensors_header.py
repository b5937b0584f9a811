"""The safe_open look-alike (io/safe_open.py) against safetensors 0.8.0 itself (test only).

Same files opened, same files refused (exception type), same metadata, names, dtypes, shapes;
and the same `.comfy_quant` bytes or errors as `get_tensor(k).numpy().tobytes()` under torch.
"""

from __future__ import annotations

import json
import math
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from quantcheck.io.safe_open import DTYPE_BITS, SafetensorsFile
from quantcheck.rules.sglang.marker_bytes import read_marker_bytes

from ._sglang_helpers import cases_dir
from ._st_writer import BITS, raw_file, write

safetensors = pytest.importorskip("safetensors")


def _reference(path: Path) -> tuple[Any, ...]:
    try:
        with safetensors.safe_open(str(path), framework="numpy") as f:
            names: list[str] = f.keys()
            slices = [(k, f.get_slice(k)) for k in names]
            entries = [(k, s.get_dtype(), tuple(s.get_shape())) for k, s in slices]
            return ("ok", f.metadata(), entries)
    except Exception as exc:
        return ("error", type(exc).__name__)


def _ours(path: Path) -> tuple[Any, ...]:
    try:
        with SafetensorsFile(str(path)) as f:
            tensors = f.header.tensors
            entries = [(k, tensors[k].dtype, tensors[k].shape) for k in f.tensor_names()]
            return ("ok", f.header.metadata, entries)
    except Exception as exc:
        return ("error", type(exc).__name__)


def test_dtype_table_matches_writer() -> None:
    assert DTYPE_BITS == BITS


def test_reference_case_files() -> None:
    files = sorted(cases_dir().glob("*.safetensors"))
    assert len(files) >= 100
    for path in files:
        assert _ours(path) == _reference(path), path.name


T = '{"dtype":"U8","shape":[1],"data_offsets":[0,1]}'
HEADERS: list[tuple[str, bytes]] = [
    (h, b"x")
    for h in [
        '{"a":' + T + "}",
        '{"a":["U8",[1],[0,1]]}',
        '{"a":["U8",[1],[0,1],5]}',
        '{"a":["U8",[1]]}',
        '{"a":{"dtype":{"U8":null},"shape":[1],"data_offsets":[0,1]}}',
        '{"a":{"dtype":{"U8":null,"I8":null},"shape":[1],"data_offsets":[0,1]}}',
        '{"a":{"dtype":{"U8":{}},"shape":[1],"data_offsets":[0,1]}}',
        '{"a":{"dtype":{"X8":null},"shape":[1],"data_offsets":[0,1]}}',
        '{"a":{"dtype":["U8"],"shape":[1],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"u8","shape":[1],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":{},"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":[1e0],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":[01],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":[true],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":{"0":1}}}',
        '{"a":{"dtype":"U8","shape":[1]}}',
        '{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[1,{"y":null}]}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1e400}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1e-400}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":NaN}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":-Infinity}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":-9223372036854775809}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "9" * 400 + "}}",
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":"\\ud800"}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":"\\udc00\\ud800"}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":"\\ud83d\\ude00\\u0000"}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":"\\x"}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":"\x01"}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":"\x7f\u2028"}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":tru}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[1,]}}',
        '{"a":' + T + ",}",
        '{"a":' + T + "} {}",
        '{"a":' + T + "}\x00",
        ' \t\r\n{"a":' + T + "}  \n ",
        '\ufeff{"a":' + T + "}",
        '{"a":' + T + ',"a":' + T + "}",
        '{"a":null,"a":' + T + "}",
        '{"a":' + T + ',"__metadata__":null}',
        '{"__metadata__":{"q":"1","q":"2"},"a":' + T + "}",
        '{"__metadata__":{},"__metadata__":{},"a":' + T + "}",
        '{"__metadata__":{"q":1},"a":' + T + "}",
        '{"__metadata__":{"q":null},"a":' + T + "}",
        '{"__metadata__":[],"a":' + T + "}",
        '{"__metadata__":"x","a":' + T + "}",
        '{"a":' + T + ',"b":{"dtype":"U8","shape":[0],"data_offsets":[1,1]}}',
        '{"a":' + T + ',"b":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}}',
        '{"a":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":[1099511627776,1099511627776,0],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":[-0],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"F4","shape":[1],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"BOOL","shape":[1,1,1],"data_offsets":[0,1]}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "[" * 125 + "]" * 125 + "}}",
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "[" * 126 + "]" * 126 + "}}",
        '{"a":["U8",[1],[0,1]],"b":' + "[" * 126 + "]" * 126 + "}",
        '{"a":["U8",[1],[0,1]],"b":' + "[" * 127 + "]" * 127 + "}",
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "[" * 9999 + "]" * 9999 + "}}",
        '{"é😀\\u00e9":' + T + "}",
        "[]",
        "null",
        "",
        "{",
    ]
]
HEADERS += [("{}", b""), ("{}", b"x"), ('{"a":' + T + "}", b"xy"), ('{"a":' + T + "}", b"")]


@pytest.mark.parametrize(("header", "data"), HEADERS)
def test_same_acceptance_as_safetensors(tmp_path: Path, header: str, data: bytes) -> None:
    path = raw_file(tmp_path / "h.safetensors", header.encode("utf-8", "surrogatepass"), data)
    assert _ours(path) == _reference(path)


def test_same_acceptance_on_raw_bytes(tmp_path: Path) -> None:
    cases = [b"", b"\x01", b"\x00" * 7, b"\x00" * 8, struct.pack("<Q", 2) + b"{}"]
    cases += [struct.pack("<Q", 3) + b'{"\xff', struct.pack("<Q", 3) + b"{}\xed\xa0\x80"]
    cases += [struct.pack("<Q", 9) + b"{}", struct.pack("<Q", 100_000_001) + b"{}"]
    cases += [struct.pack("<Q", 2**64 - 1) + b"{}", struct.pack("<Q", 4) + b'{"\xe2\x82}']
    for i, content in enumerate(cases):
        path = tmp_path / f"r{i}.safetensors"
        path.write_bytes(content)
        assert _ours(path) == _reference(path), content


def test_same_acceptance_on_mutations(tmp_path: Path) -> None:
    base = write(
        tmp_path / "base.safetensors",
        [("b.weight", "I8", [2, 4]), ("a.comfy_quant", "U8", [3], b"{}\n"), ("s", "F32", [])],
        {"quant_format": "x"},
    ).read_bytes()
    rng = random.Random(20261202)
    alphabet = b'{}[]",:0123456789-.eE \\uU8FIx\x00\xff'
    outcomes: set[str] = set()
    for i in range(400):
        content = bytearray(base)
        for _ in range(rng.randint(1, 3)):
            position = rng.randrange(8, len(content))
            content[position] = rng.choice(alphabet)
        path = tmp_path / f"m{i}.safetensors"
        path.write_bytes(bytes(content))
        result = _ours(path)
        assert result == _reference(path), bytes(content)
        outcomes.add(result[0])
    assert outcomes == {"ok", "error"}


def test_missing_and_directory(tmp_path: Path) -> None:
    assert (
        _ours(tmp_path / "nope") == _reference(tmp_path / "nope") == ("error", "FileNotFoundError")
    )
    assert _ours(tmp_path) == _reference(tmp_path) == ("error", "OSError")


def _marker_shapes() -> list[tuple[str, list[int]]]:
    shapes = [(dtype, [16 * 8 // bits]) for dtype, bits in BITS.items()]
    shapes += [(dtype, [2, 8 * 8 // bits]) for dtype, bits in BITS.items()]
    shapes += [("U8", []), ("F32", []), ("F4", [2, 3]), ("F4", [2, 0]), ("F6_E2M3", [0])]
    return shapes


@pytest.mark.parametrize(("dtype", "shape"), _marker_shapes())
def test_marker_bytes_match_torch(tmp_path: Path, dtype: str, shape: list[int]) -> None:
    pytest.importorskip("torch")
    size = BITS[dtype] * math.prod(shape) // 8
    payload = bytes(range(1, size + 1))
    path = write(tmp_path / "m.safetensors", [("a.comfy_quant", dtype, shape, payload)])
    try:
        with safetensors.safe_open(str(path), framework="pt", device="cpu") as f:
            expected: Any = f.get_tensor("a.comfy_quant").numpy().tobytes()
    except Exception as exc:
        expected = (type(exc).__name__, str(exc))
    try:
        with SafetensorsFile(path) as handle:
            got: Any = read_marker_bytes(handle, "a.comfy_quant")
    except Exception as exc:
        got = (type(exc).__name__, str(exc))
    assert got == expected
    if isinstance(got, bytes):
        assert got == payload


def test_generated_files_roundtrip(tmp_path: Path) -> None:
    tensors = [(f"t.{d}", d, [2, 8]) for d in BITS]
    path = write(tmp_path / "all.safetensors", tensors, {"k": json.dumps({"layers": {}})})
    assert _ours(path) == _reference(path)
    assert _ours(path)[0] == "ok"
