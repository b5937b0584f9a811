"""Where publishers work: the pre-commit hook, run by pre-commit itself in a temporary git
repository (the hook's environment is built from this checkout, its dependencies from the
package index pip is configured with), and the GitHub Action (action.yml at the repository
root) with the documented workflow that uses it: parsed, and the action's shell steps run as
the runner runs them, its install step included."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from install_helpers import fresh_venv, source_copy, user_env
from quantcheck.io.build import RawTensor, write_safetensors
from system_programs import in_ci, require_program

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "examples" / "workflows" / "quantcheck.yml"
HOOKS = REPO / ".pre-commit-hooks.yaml"
#: the clean file is unquantized: every quantized example fails one of sglang's loaders while
#: the model family is not known (--transformer-weights-path QC631, --comfyui-mode QC636/QC637)
BROKEN, CLEAN = "broken_seeds.safetensors", "plain.safetensors"


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
    write_safetensors(
        repo / CLEAN,
        [
            RawTensor(
                "model.diffusion_model.blocks.0.attn.qkv.weight", "BF16", (64, 64), bytes(8192)
            )
        ],
    )
    (repo / "README.md").write_text("a model\n")
    _git(repo, "add", ".")
    return repo


def _pre_commit(repo: Path, tmp_path: Path, *files: str) -> subprocess.CompletedProcess[str]:
    """`pre-commit try-repo THIS_CHECKOUT quantcheck`: the hook's virtualenv gets setuptools
    from virtualenv's bundled wheel, pip builds this checkout without build isolation and
    takes numpy and ml_dtypes (dependencies) from the configured index."""
    _need("pre_commit")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
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
    assert "2 checkpoints: 1 failing, 1 not quantized" in bad.stdout  # each file on its own


# --------------------------------------------------------------------------- GitHub Actions

ACTION = REPO / "action.yml"
GITHUB_EXPR = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


def _action() -> dict[str, Any]:
    doc = _yaml(ACTION)
    assert isinstance(doc, dict)
    return doc


def test_action_definition() -> None:
    action = _action()
    assert action["runs"]["using"] == "composite"
    assert {"paths", "target", "baseline", "fail-on"} <= set(action["inputs"])
    steps = action["runs"]["steps"]
    install = steps[0]
    assert '"$GITHUB_ACTION_PATH"' in install["run"] and "pip install" in install["run"]
    upload = next(
        s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")
    )
    assert "always()" in upload["if"]
    assert upload["with"]["sarif_file"] == "${{ inputs.sarif-file }}"
    for step in steps:
        if "run" in step:
            assert step["shell"] == "bash"
            # inputs reach the script through env, never pasted into its text (injection)
            assert "${{" not in step["run"], step["name"]


def test_workflow_uses_the_action() -> None:
    doc = _yaml(WORKFLOW)
    assert isinstance(doc, dict)
    assert doc["permissions"]["security-events"] == "write"
    # PyYAML reads the key `on` as True (YAML 1.1); GitHub reads it as "on"
    triggers = doc.get("on", doc.get(True))
    assert set(triggers) == {"push", "pull_request"}
    steps = doc["jobs"]["quantcheck"]["steps"]
    ours = [s for s in steps if str(s.get("uses", "")).split("@")[0].endswith("/quantcheck")]
    assert len(ours) == 1 and set(ours[0]["with"]) <= set(_action()["inputs"])
    assert not any("pip install quantcheck" in str(s.get("run", "")) for s in steps)
    readme = (REPO / "README.md").read_text()
    assert "action.yml" in readme and ".pre-commit-hooks.yaml" in readme


def _expand(text: str, inputs: dict[str, str]) -> str:
    """The two expression forms the action's env and conditions use."""

    def value(m: re.Match[str]) -> str:
        expr = m.group(1)
        assert expr.startswith("inputs."), expr
        return inputs[expr.removeprefix("inputs.")]

    return GITHUB_EXPR.sub(value, text)


def _run_action(
    repo: Path, env: dict[str, str], given: dict[str, str], install: bool
) -> tuple[list[subprocess.CompletedProcess[str]], dict[str, str]]:
    """Each shell step in order, as the runner runs a composite action's bash steps
    (`bash --noprofile --norc -eo pipefail`), stopping at the first failure. Returns the
    completed steps and what they wrote to $GITHUB_OUTPUT."""
    bash = require_program("bash")
    action = _action()
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    inputs.update(given)
    output = repo.parent / "github-output"
    output.write_text("")
    done = []
    for i, step in enumerate(action["runs"]["steps"]):
        if "run" not in step or (i == 0 and not install):
            continue
        step_env = {k: _expand(str(v), inputs) for k, v in step.get("env", {}).items()}
        proc = subprocess.run(
            [bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=repo,
            env={
                **env,
                **step_env,
                "GITHUB_ACTION_PATH": env["GITHUB_ACTION_PATH"],
                "GITHUB_OUTPUT": str(output),
            },
            capture_output=True,
            text=True,
            timeout=600,
        )
        done.append(proc)
        if proc.returncode != 0:
            break
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if line)
    return done, outputs


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
        "GITHUB_ACTION_PATH": str(REPO),
    }


def test_action_on_a_clean_repo(staged_repo: Path, shim: dict[str, str]) -> None:
    (sarif, gate), outputs = _run_action(staged_repo, shim, {}, install=False)
    assert sarif.returncode == 0 and gate.returncode == 0, sarif.stderr + gate.stderr
    doc = json.loads((staged_repo / "quantcheck.sarif").read_text())
    assert doc["version"] == "2.1.0" and doc["runs"][0]["results"] == []
    assert gate.stdout.strip() == ""
    assert outputs == {"sarif-file": "quantcheck.sarif", "exit-code": "0"}


def test_action_on_a_broken_checkpoint(
    staged_repo: Path, shim: dict[str, str], examples_dir: Path
) -> None:
    (staged_repo / "models").mkdir()
    shutil.copy(examples_dir / BROKEN, staged_repo / "models" / BROKEN)
    (sarif, gate), outputs = _run_action(staged_repo, shim, {}, install=False)
    assert sarif.returncode == 0, sarif.stderr  # the SARIF step never fails on findings
    results = json.loads((staged_repo / "quantcheck.sarif").read_text())["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {f"models/{BROKEN}"}  # repository-relative, as code scanning wants
    assert gate.returncode == 1 and outputs["exit-code"] == "1"
    lines = gate.stdout.strip().splitlines()
    assert lines and all(
        line.startswith(
            (
                "::error file=models/broken_seeds.safetensors,",
                "::warning file=models/broken_seeds.safetensors,",
                "::notice file=models/broken_seeds.safetensors,",
            )
        )
        for line in lines
    )
    # notices: the findings of sglang's loaders that do not read this file, saying so
    notices = [line for line in lines if line.startswith("::notice")]
    assert notices and all("[sglang (only with " in line for line in notices)
    assert any(line.startswith("::error") for line in lines)


def test_action_inputs_reach_quantcheck(
    staged_repo: Path, shim: dict[str, str], examples_dir: Path, tmp_path: Path
) -> None:
    """A baseline accepts today's findings; --target and a path with a space (one per line)
    are passed as given; a target quantcheck does not know stops the action (exit 2), never a
    silent pass."""
    named = staged_repo / "my models"
    named.mkdir()
    shutil.copy(examples_dir / BROKEN, named / BROKEN)
    baseline = staged_repo / "qc-baseline.json"
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "quantcheck",
            "check",
            "--generate-baseline",
            str(baseline),
            "--target",
            "comfyui",
            str(named),
        ],
        cwd=staged_repo,
        env=shim,
        capture_output=True,
        text=True,
    )
    assert baseline.is_file(), made.stderr
    given = {"paths": "my models\n", "target": "comfyui", "baseline": baseline.name}
    (_, gate), outputs = _run_action(staged_repo, shim, given, install=False)
    assert gate.returncode == 0 and outputs["exit-code"] == "0", gate.stdout + gate.stderr
    (failed,), _ = _run_action(staged_repo, shim, {"target": "no-such-runtime"}, install=False)
    assert failed.returncode == 2 and "could not run" in failed.stderr


def test_action_installs_from_its_checkout_and_checks(
    staged_repo: Path, tmp_path: Path, examples_dir: Path
) -> None:
    """The whole action in a fresh virtual environment: the install step builds quantcheck
    from the action's checkout (a copy of this one), the other steps use what it installed."""
    bin_dir = fresh_venv(tmp_path / "venv")
    action_path = source_copy(tmp_path / "action-checkout")
    env = user_env(bin_dir, GITHUB_ACTION_PATH=str(action_path))
    shutil.copy(examples_dir / BROKEN, staged_repo / BROKEN)
    steps, outputs = _run_action(staged_repo, env, {}, install=True)
    install = steps[0]
    assert install.returncode == 0, install.stdout + install.stderr
    assert (bin_dir / "quantcheck").is_file()
    assert [s.returncode for s in steps] == [0, 0, 1], [s.stderr for s in steps]
    assert outputs["exit-code"] == "1" and "QC305" in steps[2].stdout
