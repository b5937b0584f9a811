"""Differential tests: each sglang release's own inspector/resolver/config classes (PyPI
wheels, pinned by SHA-256) against quantcheck's verdict for that release (`make diff-sglang`).

Skipped unless QUANTCHECK_DIFF_SGLANG=1 (they download about 180 MB of wheels once).
A verdict agrees when quantcheck says "fails" exactly where the release's code refuses the file
(or does not recognise it as quantized); "degraded" counts as loading, since the real code
passes files whose layers then compute something else (QC316, QC615).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from quantcheck.check import check_paths
from quantcheck.runtimes import get_runtime

from .._build import (
    Build,
    P,
    awq,
    file,
    fp8,
    header_meta,
    int8,
    mxfp8,
    nvfp4,
    w4a8,
)
from .loader import load_release
from .real import real_verdict
from .wheels import PINNED, extract

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_SGLANG") != "1",
    reason="set QUANTCHECK_DIFF_SGLANG=1 (make diff-sglang)",
)

FC1 = "blocks.0.mlp.fc1"
PLAIN_INT8 = {"format": "int8_tensorwise"}
FP8_MARK = {"format": "float8_e4m3fn"}
CASES: dict[str, Build] = {
    "fp8-tensor-markers": file(fp8),
    "fp8-header-declared": file(fp8, header_meta({P: FP8_MARK})),
    "int8-convrot": file(int8),
    "int8-convrot-plus-plain-embedding": file(
        lambda: [*int8(), *int8("embed_tokens", mark=PLAIN_INT8)]
    ),
    "int8-header-and-tensor-complementary": file(int8, header_meta({P: PLAIN_INT8})),
    "int8-header-identical": file(
        int8,
        header_meta({P: {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 16}}),
    ),
    "nvfp4-plain": file(nvfp4),
    "nvfp4-fpmm": file(lambda: nvfp4(mark={"format": "nvfp4", "full_precision_matrix_mult": True})),
    "nvfp4-rotated": file(
        lambda: nvfp4(mark={"format": "nvfp4", "convrot": True, "full_precision_matrix_mult": True})
    ),
    "nvfp4-header-declared": file(
        lambda: nvfp4(mark={"format": "nvfp4", "full_precision_matrix_mult": True}),
        header_meta({P: {"format": "nvfp4", "full_precision_matrix_mult": True}}),
    ),
    "mxfp8-marker": file(mxfp8),
    "mxfp8-quant-format": file(lambda: mxfp8()[:-1], {"quant_format": "mxfp8"}),
    "w4a8": file(w4a8),
    "fp8-plus-int8": file(lambda: [*fp8(), *int8(FC1)]),
    "e5m2": file(lambda: fp8(weight="F8_E5M2", mark={"format": "float8_e5m2"})),
    "awq": file(awq),
}
RELEASES = tuple(PINNED)


@pytest.fixture(scope="session")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    into = tmp_path_factory.mktemp("sglang")
    out = {}
    for version in RELEASES:
        root = extract(version, into)
        if root is None:
            pytest.fail(f"could not download sglang=={version} (pip download --no-deps)")
        out[version] = root
    return out


def test_every_modelled_release_is_pinned() -> None:
    assert get_runtime("sglang").release_names() == RELEASES


@pytest.mark.parametrize("version", RELEASES)
def test_release_agrees_with_quantcheck(
    version: str, trees: dict[str, Path], tmp_path: Path
) -> None:
    mod = load_release(trees[version])
    disagree = []
    for name, build in CASES.items():
        folder = tmp_path / name
        folder.mkdir()
        paths = [str(p) for p in build(folder)]
        loads, why = real_verdict(mod, paths)
        key = f"sglang@{version}"
        ours = check_paths(paths, target=key).target_status(key)["status"]
        if loads != (ours != "fails"):
            disagree.append(
                f"{name}: sglang {version} {'loads' if loads else 'refuses'} "
                f"({why}); quantcheck says {ours}"
            )
    assert not disagree, "\n".join(disagree)
