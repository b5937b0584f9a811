"""Shared fixtures and helpers for every test folder.

- `examples_dir`: the repository's `examples/` folder (the generated example checkpoints).
- `require_program(name)`: the path of a system program; skips the test with a clear reason when
  it is missing locally, but fails it when `CI=true` (CI must install what the tests need).
  Request the fixture of that name (importing `conftest` is ambiguous: tests/numeric has one).
- `tests/hostile.py` builds safetensors files byte by byte, broken ones included.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from example_files import BROKEN_EXAMPLE, CLEAN_EXAMPLES, EXAMPLES
from system_programs import missing_program, require_program


@pytest.fixture(name="require_program")
def _require_program_fixture() -> Callable[[str], str]:
    """The `require_program` helper as a fixture, for test folders that cannot import it."""
    return require_program


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    """The examples folder; fails clearly when the example files are missing."""
    missing = [n for n in (*CLEAN_EXAMPLES, BROKEN_EXAMPLE) if not (EXAMPLES / n).is_file()]
    if missing:
        pytest.fail(
            f"example files missing from {EXAMPLES}: {', '.join(missing)}; run `make examples`",
            pytrace=False,
        )
    return EXAMPLES


#: the huggingface_hub conventions quantcheck honours: none of the machine's may reach a test
#: (a saved token, a proxy, a CA bundle, a model cache, offline mode).
HF_ENVIRONMENT = (
    "HF_TOKEN",
    "HF_TOKEN_PATH",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_HUB_OFFLINE",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "SSL_CERT_FILE",
)


@pytest.fixture(autouse=True)
def _no_machine_hub_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for name in HF_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.getbasetemp() / "no-hf-home"))


_SKIPPED_FOR_PROGRAMS: list[str] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Count the tests skipped for a missing system program (printed last, see below)."""
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
        name = missing_program(reason)
        if name is not None:
            _SKIPPED_FOR_PROGRAMS.append(name)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's last line, after pytest's own count: how many tests a missing system
    program skipped, and the one command that installs them."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if _SKIPPED_FOR_PROGRAMS and reporter is not None:
        names = ", ".join(sorted(set(_SKIPPED_FOR_PROGRAMS)))
        count = len(_SKIPPED_FOR_PROGRAMS)
        reporter.write_line(
            f"{count} test{'s' if count > 1 else ''} skipped: system programs not installed "
            f"({names}); run `sudo tools/install-system-programs`, then `make test` runs them"
        )
