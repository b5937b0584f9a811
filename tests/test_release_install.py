"""The release path: `python -m build` makes an sdist and a wheel that `twine check` accepts,
and the wheel installed into a fresh virtual environment (no access to this checkout) gives
every command, numerics included."""

from __future__ import annotations

import shutil
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from install_helpers import fresh_venv, run, source_copy, user_env
from quantcheck._version import __version__

BROKEN, CLEAN = "broken_seeds.safetensors", "nvfp4.safetensors"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("release")
    src = source_copy(root / "src")
    out = run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(root / "dist"), "."],
        cwd=src,
        env=user_env(),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SetuptoolsDeprecationWarning" not in out.stdout + out.stderr
    return root / "dist"


def _one(dist: Path, pattern: str) -> Path:
    (found,) = dist.glob(pattern)
    return found


def test_twine_accepts_the_sdist_and_the_wheel(dist: Path) -> None:
    files = [str(_one(dist, "*.whl")), str(_one(dist, "*.tar.gz"))]
    out = run([sys.executable, "-m", "twine", "check", "--strict", *files], dist, user_env())
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("PASSED") == 2


def test_wheel_metadata(dist: Path) -> None:
    wheel = _one(dist, f"quantcheck-{__version__}-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as z:
        meta = Parser().parsestr(
            z.read(f"quantcheck-{__version__}.dist-info/METADATA").decode("utf-8")
        )
        names = z.namelist()
        entry_points = z.read(f"quantcheck-{__version__}.dist-info/entry_points.txt").decode()
    assert meta["Version"] == __version__
    assert meta["License-Expression"] == "Apache-2.0"
    requires = meta.get_all("Requires-Dist") or []
    plain = {r.split(">")[0].split("=")[0].strip() for r in requires if "extra ==" not in r}
    assert {"numpy", "ml_dtypes"} <= plain  # every command works after one install
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert "quantcheck/py.typed" in names
    # the sglang plugin (issue 27): its module, its entry point and its extra
    assert "quantcheck/integrations/sglang_plugin.py" in names
    assert (
        "[sglang.multimodal_gen.plugins]\n"
        "quantcheck = quantcheck.integrations.sglang_plugin:register"
    ) in entry_points
    assert "sglang" in (meta.get_all("Provides-Extra") or [])


def test_wheel_in_a_fresh_venv_runs_every_kind_of_command(
    dist: Path, tmp_path: Path, examples_dir: Path
) -> None:
    bin_dir = fresh_venv(tmp_path / "venv")
    env = user_env(bin_dir)
    wheel = _one(dist, "*.whl")
    installed = run([str(bin_dir / "pip"), "install", "--quiet", str(wheel)], tmp_path, env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    work = tmp_path / "work"
    work.mkdir()
    for name in (BROKEN, CLEAN):
        shutil.copy(examples_dir / name, work / name)
    _write_bf16(work / "plain.safetensors")
    qc = str(bin_dir / "quantcheck")

    where = run(
        [str(bin_dir / "python"), "-c", "import quantcheck; print(quantcheck.__file__)"], work, env
    )
    assert where.stdout.startswith(str(tmp_path / "venv")), where.stdout  # not this checkout

    version = run([qc, "--version"], work, env)
    assert version.stdout.strip() == f"quantcheck {__version__}"
    broken = run([qc, "check", BROKEN], work, env)
    assert broken.returncode == 1 and "QC305" in broken.stdout, broken.stdout + broken.stderr
    # comfyui: sglang's --comfyui-mode cannot load NVFP4 (QC636), so the default check says 1
    clean = run([qc, "check", "--deep", "--target", "comfyui", CLEAN], work, env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    quantized = run(
        [qc, "quantize", "--to", "nvfp4", "-o", "q.safetensors", "plain.safetensors"], work, env
    )
    assert quantized.returncode == 0, quantized.stdout + quantized.stderr
    again = run([qc, "check", "--target", "comfyui", "q.safetensors"], work, env)
    assert again.returncode == 0, again.stdout + again.stderr
    compared = run([qc, "compare", "q.safetensors", "plain.safetensors"], work, env)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "Traceback" not in compared.stderr + quantized.stderr


def _write_bf16(path: Path) -> None:
    import ml_dtypes
    import numpy as np

    from quantcheck.io.build import RawTensor, write_safetensors

    rng = np.random.default_rng(0)
    tensors = []
    for i in range(2):
        w = (rng.standard_normal((64, 128)) * 0.05).astype(ml_dtypes.bfloat16)
        tensors.append(RawTensor(f"blocks.{i}.attn.qkv.weight", "BF16", w.shape, w.tobytes()))
    write_safetensors(path, tensors)


@pytest.mark.parametrize("package", ["numpy", "ml_dtypes"])
def test_a_missing_dependency_is_one_line_and_exit_2(
    package: str, tmp_path: Path, examples_dir: Path
) -> None:
    """An environment that lost numpy (or ml_dtypes): one line naming it, exit 2, no trace."""
    code = (
        f"import sys; sys.modules[{package!r}] = None\n"
        "from quantcheck.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    out = run(
        [
            sys.executable,
            "-c",
            code,
            "dequantize",
            str(examples_dir / CLEAN),
            "-o",
            str(tmp_path / "d.safetensors"),
        ],
        tmp_path,
        {**user_env(), "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")},
    )
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and package in lines[0] and "pip install" in lines[0], out.stderr
    assert not (tmp_path / "d.safetensors").exists()
