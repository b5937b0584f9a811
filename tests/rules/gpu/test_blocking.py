"""Load-blocking file-level findings (a runtime's `GpuRules.blocking`, its own data): a failing
finding that names no layer refuses the layers of the formats its runtime declares for it, and
only where its effect on the release is `fails`; other file-level findings refuse nothing."""

from __future__ import annotations

from pathlib import Path

from quantcheck.checking import check_paths
from quantcheck.gpus import expand_specs
from quantcheck.runtimes.sglang_gpu import LOAD_BLOCKING

from .._build import P, file, fp8, mxfp8, nvfp4
from .test_comfyui_gpu import entries, modes

Q = "blocks.1.attn.qkv"


def test_sglang_declares_qc615_for_mxfp8() -> None:
    assert {"QC615": frozenset({"mxfp8"})} == LOAD_BLOCKING


def test_qc615_refuses_mxfp8_layers_where_it_fails(tmp_path: Path) -> None:
    got = entries(tmp_path, mxfp8, "b200", target="sglang@0.5.23")["b200"]
    record = got["execution"][P]
    assert record["mode"] == "refused"
    assert record["reason"].startswith("QC615 fails on sglang@0.5.23")
    assert "file-level, blocks every mxfp8 layer" in record["reason"]
    assert got["formats"] == {"mxfp8": "refused"}


def test_qc615_refuses_nothing_where_the_release_loads_mxfp8(tmp_path: Path) -> None:
    assert modes(tmp_path, mxfp8, "b200", target="sglang@0.5.22") == {"b200": "native"}


def test_qc615_refuses_only_the_mxfp8_layers(tmp_path: Path) -> None:
    def make() -> list:
        return [*mxfp8(), *fp8(Q)]

    got = entries(tmp_path, make, "b200", target="sglang@0.5.23")["b200"]
    assert got["execution"][P]["mode"] == "refused"
    assert got["execution"][Q]["mode"] != "refused"


def test_one_loader_paths_findings_refuse_nothing(tmp_path: Path) -> None:
    # QC636/QC637 fail one of sglang's loader paths each: the layers stay as the device says
    paths = [str(p) for p in file(nvfp4)(tmp_path)]
    key = "sglang@0.5.23"
    report = check_paths(paths, target=key, gpus=expand_specs(["b200"]))
    failing = {
        d.code for d in report.diagnostics if d.layer is None and d.effect_at(key).value == "fails"
    }
    assert failing & {"QC636", "QC637"}
    assert report.target_status(key)["gpu"]["b200"]["execution"][P]["mode"] == "native"
