"""README samples are real output: each is run from the repo root and compared.

A sample is a fenced block in README.md whose first line is `$ quantcheck ARGS`; the lines after
it are what the command prints on stdout. Two elisions, written `…`, keep samples short:

- a line that is only `…` stands for any number of lines (zero or more);
- `…` inside a line stands for any text within that line.

Trailing spaces are ignored (editors strip them). Regenerate stale samples with

    PYTHONPATH=src python tests/test_readme_samples.py --update

which reruns every sample and rewrites the ones that no longer match, keeping as many lines
before the first and after the last `…` line as the sample had (in-line `…` is not kept).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PROMPT = "$ quantcheck "
ELLIPSIS = "…"
FENCE = re.compile(r"^(```+)[^\n`]*\n(.*?)^\1[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Sample:
    command: str  # everything after the `$ `
    expected: list[str]  # the lines after the command
    start: int  # offsets of the block's body in the README text
    end: int

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command)[1:]


def samples(text: str) -> list[Sample]:
    """Every marked block, in README order."""
    found = []
    for m in FENCE.finditer(text):
        body = m.group(2)
        if not body.startswith(PROMPT):
            continue
        first, _, rest = body.partition("\n")
        lines = rest.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        found.append(Sample(first[2:], lines, m.start(2), m.end(2)))
    return found


def _normal(lines: list[str]) -> list[str]:
    out = [line.rstrip() for line in lines]
    while out and not out[-1]:
        out.pop()
    return out


def pattern(expected: list[str]) -> re.Pattern[str]:
    """A regex for the whole output: `…` lines match any lines, in-line `…` any text."""
    parts = []
    for line in _normal(expected):
        if line == ELLIPSIS:
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*".join(re.escape(p) for p in line.split(ELLIPSIS)) + r"\n")
    return re.compile("".join(parts))


def run_sample(sample: Sample) -> tuple[int, str, str]:
    """Run it as a user would, from the repo root, with this checkout's package."""
    import quantcheck

    env = {
        **os.environ,
        "PYTHONPATH": str(Path(quantcheck.__file__).parents[1]),
        "NO_COLOR": "1",
        "COLUMNS": "100",
        "PYTHONIOENCODING": "utf-8",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "quantcheck", *sample.argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


def matches(sample: Sample, output: str) -> bool:
    text = "\n".join(_normal(output.split("\n"))) + "\n"
    return pattern(sample.expected).fullmatch(text) is not None


def regenerated(sample: Sample, output: str) -> list[str]:
    """The sample's new lines: the real output, elided the way the old sample was."""
    lines = _normal(output.split("\n"))
    marks = [i for i, line in enumerate(sample.expected) if line.strip() == ELLIPSIS]
    if not marks:
        return lines
    head, tail = marks[0], len(_normal(sample.expected)) - marks[-1] - 1
    if head + tail >= len(lines):
        return lines
    return [*lines[:head], ELLIPSIS, *(lines[len(lines) - tail :] if tail else [])]


def update(path: Path = README) -> list[str]:
    """Rewrite the stale samples in `path`; the commands whose sample changed."""
    text = path.read_text(encoding="utf-8")
    changed = []
    for sample in reversed(samples(text)):  # from the end: offsets stay valid
        rc, out, err = run_sample(sample)
        if rc not in (0, 1):
            raise SystemExit(f"{sample.command}: exit {rc}: {err.strip()}")
        if matches(sample, out):
            continue
        body = "\n".join([f"$ {sample.command}", *regenerated(sample, out)]) + "\n"
        text = text[: sample.start] + body + text[sample.end :]
        changed.append(sample.command)
    path.write_text(text, encoding="utf-8")
    return changed


# --------------------------------------------------------------------------- tests

README_SAMPLES = samples(README.read_text(encoding="utf-8"))


def test_readme_has_samples() -> None:
    commands = [s.argv[0] for s in README_SAMPLES]
    assert {"check", "inspect", "explain"} <= set(commands)


@pytest.mark.parametrize("sample", README_SAMPLES, ids=[s.command for s in README_SAMPLES])
def test_readme_sample_is_what_the_command_prints(sample: Sample) -> None:
    rc, out, err = run_sample(sample)
    assert rc in (0, 1) and "Traceback" not in err, err
    assert matches(sample, out), (
        f"README sample is stale: `{sample.command}` now prints\n{out}\n"
        "regenerate: PYTHONPATH=src python tests/test_readme_samples.py --update"
    )


def test_every_quantcheck_command_in_a_block_is_a_sample() -> None:
    """A `$ quantcheck` line anywhere but first in a block would silently go unchecked."""
    for m in FENCE.finditer(README.read_text(encoding="utf-8")):
        body = m.group(2).split("\n")
        assert not any(line.startswith(PROMPT) for line in body[1:]), body[0]


@pytest.mark.parametrize(
    ("expected", "output", "ok"),
    [
        (["a", "b"], "a\nb\n", True),
        (["a", "b"], "a\nb  \n\n", True),  # trailing spaces and blank lines do not count
        (["a", "b"], "a\nc\n", False),
        (["a", "…", "z"], "a\nz\n", True),
        (["a", "…", "z"], "a\nb\nc\nz\n", True),
        (["a", "…", "z"], "a\nb\nc\n", False),
        (["a: …x", "z"], "a: 123x\nz\n", True),
        (["a: …x", "z"], "a: 123y\nz\n", False),
        (["a"], "a\nb\n", False),  # no silent tail
        (["a.b"], "axb\n", False),  # the rest is literal
    ],
)
def test_sample_matching(expected: list[str], output: str, ok: bool) -> None:
    assert matches(Sample("quantcheck x", expected, 0, 0), output) is ok


def test_regenerated_keeps_the_elision() -> None:
    sample = Sample("quantcheck x", ["a", "…", "y", "z"], 0, 0)
    out = "A\nB\nC\nY\nZ\n"
    assert regenerated(sample, out) == ["A", "…", "Y", "Z"]
    assert regenerated(Sample("quantcheck x", ["a"], 0, 0), out) == ["A", "B", "C", "Y", "Z"]


def test_update_rewrites_a_stale_sample(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "text\n\n```\n$ quantcheck rules\nQC101  stale\n…\n```\n\nmore\n", encoding="utf-8"
    )
    assert update(readme) == ["quantcheck rules"]
    new = readme.read_text(encoding="utf-8")
    assert new.startswith("text\n\n```\n$ quantcheck rules\nQC101  file-too-small")
    assert new.endswith("\n…\n```\n\nmore\n")
    assert update(readme) == []


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        raise SystemExit(__doc__)
    for command in update():
        print(f"updated: {command}")
