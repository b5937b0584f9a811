"""Standard-library-only guarantee: importing quantcheck and running `check` / `inspect` loads
no numpy, torch, safetensors or huggingface_hub (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("numpy", "torch", "safetensors", "huggingface_hub", "ml_dtypes", "comfy_kitchen")
#: Standard-library modules a local check must not pay for at start-up (each costs milliseconds:
#: the remote machinery pulls in http.client, ssl and email; typing and dataclasses pull in
#: more). A remote check imports them when it needs them.
COSTLY = (
    "typing",
    "dataclasses",
    "http.client",
    "ssl",
    "email",
    "concurrent.futures",
    "ast",
    "urllib.parse",
)

SCRIPT = r"""
import contextlib, io, json, sys
before = set(sys.modules)
import quantcheck
after_import = set(sys.modules)
from quantcheck.cli.main import main
rcs = []
for argv in ARGVS:
    with contextlib.redirect_stdout(io.StringIO()):
        rcs.append(main(argv))
new = sorted(set(sys.modules) - before)
third_party = sorted({m.split(".")[0] for m in new} - set(sys.stdlib_module_names)
                     - {"quantcheck"})
print(json.dumps({"rcs": rcs, "costly": sorted(m for m in COSTLY if m in sys.modules),
                  "heavy": sorted(m for m in HEAVY if m in sys.modules),
                  "third_party": third_party,
                  "on_import": sorted(after_import - before)}))
"""


def run_fresh(argvs: list[list[str]]) -> dict[str, object]:
    code = f"ARGVS = {argvs!r}\nHEAVY = {HEAVY!r}\nCOSTLY = {COSTLY!r}\n" + SCRIPT
    proc = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_baseline_interpreter_has_none_of_them() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys, json; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(proc.stdout) == []


def test_check_and_inspect_load_no_heavy_modules(examples_dir: Path) -> None:
    ex = str(examples_dir / "nvfp4.safetensors")
    broken = str(examples_dir / "broken_seeds.safetensors")
    result = run_fresh(
        [
            # comfyui: the example is clean for it (sglang's loaders refuse it while its model
            # family is unknown), so 0 shows the check ran to the end
            ["check", "--target", "comfyui", ex],
            ["check", "--format", "json", broken],
            ["check", "--target", "comfyui", "--format", "sarif", ex],
            ["check", "--target", "comfyui", "--format", "github", ex],
            ["inspect", ex],
            ["inspect", "--format", "json", str(examples_dir)],
        ]
    )
    assert result["rcs"] == [0, 1, 0, 0, 0, 0]
    assert result["heavy"] == []
    assert result["third_party"] == []


def test_local_check_skips_costly_standard_modules(examples_dir: Path) -> None:
    ex = str(examples_dir / "nvfp4.safetensors")
    result = run_fresh(
        [["check", "--target", "comfyui", ex], ["check", str(examples_dir)], ["inspect", ex]]
    )
    assert result["rcs"][0] == 0 and result["rcs"][2] == 0
    assert result["costly"] == []


def test_plain_import_is_light() -> None:
    result = run_fresh([])
    assert result["heavy"] == [] and result["third_party"] == []
    assert "quantcheck" in result["on_import"]


def test_heavy_modules_would_be_detected(examples_dir: Path) -> None:
    """The probe itself works: a module that is imported does show up."""
    pytest.importorskip("numpy")
    code = f"ARGVS = []\nHEAVY = {HEAVY!r}\nCOSTLY = {COSTLY!r}\nimport numpy\n" + SCRIPT
    proc = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1])["heavy"] == ["numpy"]


#: most `quantcheck` modules a local check of one clean file imports, per target (issue 23:
#: 78 / 91 at its start, 98 / 106 once each runtime had its folder; the figures of
#: BENCHMARKS.md): the catalogs are read only for the codes a check uses, one checkpoint skips
#: the progress bar and read-ahead, a baseline module loads only with --baseline. Issue 26
#: added 6 (+6): the model family's detection runs on every check (quantcheck.families with
#: its detection and table, model.family_view, rules.family with its checks; the layouts
#: and the family catalog load only once a family's keys match or a QC86x is reported).
#: Issue 23's last moves took 6 away: no rules/support package (each runtime's QC6xx are in
#: its own catalog), no compat package (sglang's loader reproduction is in rules/sglang/), no
#: runtimes/builtin_reasons (each record holds its reasons), and ComfyUI's key plumbing and
#: header-entry revision (rules/comfyui/keys.py, attach.py) and the --help epilogs
#: (cli/epilogs.py) load only when a file has a stray marker or header entry, or help is shown.
MOST_MODULES = {"default": 75, "all": 91}


@pytest.mark.parametrize("target", list(MOST_MODULES))
def test_a_local_check_imports_few_of_our_modules(target: str, examples_dir: Path) -> None:
    import quantcheck

    src = str(Path(quantcheck.__file__).parents[1])
    argv = ["check", "--target", target, str(examples_dir / "fp8_e4m3fn.safetensors")]
    code = (
        f"import sys; sys.path.insert(0, {src!r})\n"
        "import contextlib, io\nfrom quantcheck.cli.main import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    rc = main({argv!r})\n"
        "print(rc, sum(m.split('.')[0] == 'quantcheck' for m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    rc, count = map(int, proc.stdout.split())
    assert rc == 1  # default: sglang's --transformer-weights-path refuses the file (QC631)
    assert count <= MOST_MODULES[target], f"{count} quantcheck modules for --target {target}"
