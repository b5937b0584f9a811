"""Where publishers work: the pre-commit hook, run by pre-commit itself in a temporary git
repository (offline: the hook's environment is built from this checkout without an index),
and the documented GitHub Actions workflow, parsed and its `run:` commands executed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from system_programs import in_ci, require_program

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "examples" / "workflows" / "quantcheck.yml"
HOOKS = REPO / ".pre-commit-hooks.yaml"
BROKEN, CLEAN = "broken_seeds.safetensors", "nvfp4.safetensors"


def _need(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        if in_ci():
            pytest.fail(f"{module} is not installed; it is in the dev extra", pytrace=False)
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")


def _yaml(path: Path) -> object:
    _need("yaml")
    import yaml

    return yaml.safe_load(path.read_text())


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        [require_program("git"), *args],
        cwd=repo,
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example",
        },
    )


def test_hook_definition() -> None:
    hooks = _yaml(HOOKS)
    assert isinstance(hooks, list) and [h["id"] for h in hooks] == ["quantcheck"]
    hook = hooks[0]
    assert hook["entry"].split()[:2] == ["quantcheck", "check"]
    assert hook["language"] == "python"
    import re

    files = re.compile(hook["files"])
    assert files.search("models/a.safetensors") and files.search("m.safetensors.index.json")
    assert not files.search("README.md") and not files.search("a.safetensors.bak")


@pytest.fixture
def staged_repo(tmp_path: Path, examples_dir: Path) -> Path:
    repo = tmp_path / "publisher"
    repo.mkdir()
    _git(repo, "init", "-q")
    shutil.copy(examples_dir / CLEAN, repo / CLEAN)
    (repo / "README.md").write_text("a model\n")
    _git(repo, "add", ".")
    return repo


def _pre_commit(repo: Path, tmp_path: Path, *files: str) -> subprocess.CompletedProcess[str]:
    """`pre-commit try-repo THIS_CHECKOUT quantcheck`, offline: no package index; the hook's
    virtualenv gets setuptools from virtualenv's bundled wheel and pip builds this checkout
    without build isolation."""
    _need("pre_commit")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "0",
        "VIRTUALENV_SETUPTOOLS": "bundle",
        "PYTHONPATH": "",
        "NO_COLOR": "1",
    }
    env.pop("PYTHONPATH")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "try-repo",
            str(REPO),
            "quantcheck",
            "--color",
            "never",
            "--files",
            *files,
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_pre_commit_hook_passes_clean_and_fails_broken(
    staged_repo: Path, tmp_path: Path, examples_dir: Path
) -> None:
    ok = _pre_commit(staged_repo, tmp_path, CLEAN, "README.md")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "quantcheck" in ok.stdout and "Passed" in ok.stdout
    shutil.copy(examples_dir / BROKEN, staged_repo / BROKEN)
    _git(staged_repo, "add", BROKEN)
    bad = _pre_commit(staged_repo, tmp_path, CLEAN, BROKEN)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout and "QC305" in bad.stdout
    assert "2 checkpoints: 1 ok, 1 failing" in bad.stdout  # each staged file on its own


# --------------------------------------------------------------------------- GitHub Actions


def _steps() -> list[dict[str, object]]:
    doc = _yaml(WORKFLOW)
    assert isinstance(doc, dict)
    jobs = doc["jobs"]
    assert list(jobs) == ["quantcheck"]
    return jobs["quantcheck"]["steps"]


def test_workflow_shape() -> None:
    doc = _yaml(WORKFLOW)
    assert isinstance(doc, dict)
    assert doc["permissions"]["security-events"] == "write"
    # PyYAML reads the key `on` as True (YAML 1.1); GitHub reads it as "on"
    triggers = doc.get("on", doc.get(True))
    assert set(triggers) == {"push", "pull_request"}
    steps = _steps()
    upload = next(
        s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")
    )
    assert upload["with"]["sarif_file"] == "quantcheck.sarif" and upload["if"] == "always()"
    runs = [str(s["run"]) for s in steps if "run" in s and "quantcheck check" in str(s["run"])]
    assert any("--output-format sarif" in r for r in runs)
    assert any("--output-format github" in r for r in runs)
    readme = (REPO / "README.md").read_text()
    assert "examples/workflows/quantcheck.yml" in readme and ".pre-commit-hooks.yaml" in readme


@pytest.fixture
def shim(tmp_path: Path) -> dict[str, str]:
    """PATH with a `quantcheck` that runs this checkout's source."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "quantcheck"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -m quantcheck "$@"\n')
    exe.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO / "src"),
        "NO_COLOR": "1",
    }


def _run_steps(repo: Path, env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """Each `run:` that calls quantcheck, as the runner would (bash -e)."""
    bash = require_program("bash")
    out = []
    for step in _steps():
        cmd = str(step.get("run", ""))
        if cmd.startswith("quantcheck "):
            out.append(
                subprocess.run(
                    [bash, "-e", "-c", cmd],
                    cwd=repo,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
            )
    assert len(out) == 2
    return out


def test_workflow_commands_on_a_clean_repo(staged_repo: Path, shim: dict[str, str]) -> None:
    sarif, gate = _run_steps(staged_repo, shim)
    assert sarif.returncode == 0 and gate.returncode == 0, sarif.stderr + gate.stderr
    doc = json.loads((staged_repo / "quantcheck.sarif").read_text())
    assert doc["version"] == "2.1.0" and doc["runs"][0]["results"] == []
    assert gate.stdout.strip() == ""


def test_workflow_commands_on_a_broken_checkpoint(
    staged_repo: Path, shim: dict[str, str], examples_dir: Path
) -> None:
    (staged_repo / "models").mkdir()
    shutil.copy(examples_dir / BROKEN, staged_repo / "models" / BROKEN)
    sarif, gate = _run_steps(staged_repo, shim)
    assert sarif.returncode == 0, sarif.stderr  # the SARIF step never fails on findings
    results = json.loads((staged_repo / "quantcheck.sarif").read_text())["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {f"models/{BROKEN}"}  # repository-relative, as code scanning wants
    assert gate.returncode == 1
    lines = gate.stdout.strip().splitlines()
    assert lines and all(
        line.startswith(
            (
                "::error file=models/broken_seeds.safetensors,",
                "::warning file=models/broken_seeds.safetensors,",
            )
        )
        for line in lines
    )
