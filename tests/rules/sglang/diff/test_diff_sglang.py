"""Differential tests: each sglang release's own header path, inspector/resolver/config classes
(PyPI wheels, pinned by SHA-256) against quantcheck's verdict for that release (`make
diff-sglang`), in the order of sglang's text-encoder loader: the header path
(`get_quant_config_from_safetensors_metadata`; 0.5.23's rowwise FP8 config; 0.5.18's NVFP4
builder) first, then the markers. Both the verdict and the path (header or not) must agree.

Skipped unless QUANTCHECK_DIFF_SGLANG=1 (they download about 180 MB of wheels once).
A verdict agrees when quantcheck says "fails" exactly where the release's code refuses the file
(or does not recognise it as quantized); "degraded" counts as loading, since the real code
passes files whose layers then compute something else (QC316, QC615).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.runtimes import get_runtime

from ..._build import (
    INT8_CONVROT,
    Build,
    P,
    awq,
    file,
    fp8,
    header_meta,
    int8,
    mxfp8,
    nvfp4,
    rowwise,
    w4a8,
)
from .loader import load_release
from .real import later_only, reader_status, real_verdict
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

#: Files sglang's header path reads (get_quant_config_from_safetensors_metadata, 0.5.23's
#: rowwise FP8 config, 0.5.18's NVFP4 builder), beside the marker files above.
HEADER_CASES: dict[str, Build] = {
    "fp8-header-partial": file(lambda: [*fp8(), *fp8(FC1)], header_meta({P: FP8_MARK})),
    "fp8-header-plus-int8-declared": file(
        lambda: [*fp8(), *int8(FC1)],
        header_meta({P: FP8_MARK, FC1: INT8_CONVROT}),
    ),
    "e5m2-header-declared": file(
        lambda: fp8(weight="F8_E5M2", mark={"format": "float8_e5m2"}),
        header_meta({P: {"format": "float8_e5m2"}}),
    ),
    "fp8-header-without-format-version": file(
        fp8, {"_quantization_metadata": json.dumps({"layers": {P: FP8_MARK}})}
    ),
    "fp8-header-not-json": file(fp8, {"_quantization_metadata": "{not json"}),
    "header-format-null": file(fp8, header_meta({P: {"format": None}})),
    "header-format-null-after-float8": file(
        lambda: [*fp8(), *fp8(FC1)], header_meta({P: FP8_MARK, FC1: {"format": None}})
    ),
    "nvfp4-padded-scales": file(
        lambda: nvfp4(n=128, k=48, mark={"format": "nvfp4", "full_precision_matrix_mult": True})
    ),
    "nvfp4-aligned-and-padded": file(
        lambda: [
            *nvfp4(mark={"format": "nvfp4", "full_precision_matrix_mult": True}),
            *nvfp4(FC1, n=128, k=48, mark={"format": "nvfp4", "full_precision_matrix_mult": True}),
        ]
    ),
    "rowwise-ok": rowwise(),
    "rowwise-format-version-1.0": rowwise(version="1.0"),
    "rowwise-scale-per-row-2d": rowwise(scale=("F32", (64, 1))),
    "rowwise-scale-bf16": rowwise(scale=("BF16", (64,))),
    "rowwise-without-descriptor": rowwise(quant_configs=None),
    "rowwise-recipe-tensorwise": rowwise(
        quant_configs={"rowwise-float8_e4m3fn": {"scale_recipe": "tensor"}}
    ),
    "rowwise-beside-fp8-layer": rowwise(other={"blocks.1.attn.qkv": FP8_MARK}),
    "rowwise-bf16-layer-with-scale": rowwise(bf16_scale=True),
}
CASES.update(HEADER_CASES)
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
        loads, why, path = real_verdict(mod, paths)
        key = f"sglang@{version}"
        report = check_paths(paths, target=key)
        status = report.target_status(key)
        ours = reader_status(report, key)
        if loads and ours == "fails" and later_only(report, key):
            pass  # fails at a later stage (test_stages.py runs it)
        elif loads != (ours != "fails"):
            disagree.append(
                f"{name}: sglang {version} {'loads' if loads else 'refuses'} "
                f"({why}); quantcheck says {ours}"
            )
        if (path == "header") != (status["path"] == "header"):
            disagree.append(
                f"{name}: sglang {version} reads it through its {path} path ({why}); "
                f"quantcheck says {status['path']} ({status['path_reason']})"
            )
    assert not disagree, "\n".join(disagree)
