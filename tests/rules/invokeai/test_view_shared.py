"""InvokeAI's QC720 count shares one `invokeai_view` outcome among layers alike in marker fields
and tensor dtypes/shapes: per layer, the shared outcome is the one the layer's own view gives."""

from __future__ import annotations

import struct
from pathlib import Path

from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.rules.invokeai.checks import QUANTIZED_DTYPES, InvokeaiChecks, invokeai_view

from ..test_rule_table import CASES

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _alike_marked(tmp_path: Path) -> Path:
    """Three FP8 layers with one marker: a scalar scale (exact), a scale that does not
    broadcast (raises), and a row scale (not what FP8 dequantizes with: wrong)."""
    tensors = []
    for p, scale in (("a", ()), ("b", (3,)), ("c", (16, 1))):
        n = 1
        for d in scale:
            n *= d
        tensors += [
            RawTensor(f"{p}.weight", "F8_E4M3", (16, 16), bytes(256)),
            RawTensor(f"{p}.weight_scale", "F32", scale, struct.pack("<f", 0.5) * n),
            marker_tensor(p, {"format": "float8_e4m3fn"}),
        ]
    path = tmp_path / "alike.safetensors"
    write_safetensors(path, tensors)
    return path


def _paths(tmp_path: Path) -> list[list[Path]]:
    out = [[p] for p in sorted(EXAMPLES.glob("*.safetensors"))]
    out.append([_alike_marked(tmp_path)])
    for i, case in enumerate(CASES):
        for sub, build in (("bad", case.build), ("twin", case.twin)):
            if build is not None:
                folder = tmp_path / f"{i}{sub}"
                folder.mkdir()
                out.append(build(folder))
    return out


def test_shared_outcomes_equal_each_layers_own(tmp_path: Path) -> None:
    checked = found = 0
    for paths in _paths(tmp_path):
        with load_checkpoint([str(p) for p in paths]) as ck:
            shared = [d for d in InvokeaiChecks(ck).file_findings() if d.code == "QC720"]
            exact: dict[str, int] = {}  # the count with every layer viewed on its own
            for la in ck.layers.values():
                w = la.weight
                if w is None or w.dtype not in QUANTIZED_DTYPES:
                    continue
                if invokeai_view(la)[0] == "exact":
                    fmt = la.format if isinstance(la.format, str) else "unmarked"
                    exact[fmt] = exact.get(fmt, 0) + 1
        assert len(shared) == (1 if exact else 0)
        if exact:
            d = shared[0]
            assert d.data["formats"] == sorted(exact)
            assert d.message.startswith(f"{sum(exact.values())} quantized layer")
            found += 1
        checked += 1
    assert checked > 100 and found > 10


def test_alike_marked_layers_keep_their_own_outcomes(tmp_path: Path) -> None:
    with load_checkpoint([str(_alike_marked(tmp_path))]) as ck:
        outcomes = [invokeai_view(la)[0] for la in ck.layers.values()]
        shared = [d for d in InvokeaiChecks(ck).file_findings() if d.code == "QC720"]
    assert outcomes == ["exact", "raises", "wrong"]
    assert shared[0].message.startswith("1 quantized layer ")
