"""`RuleCase`: one row of the data-driven rule tables (`cases*.py` in this folder)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._build import Build


@dataclass(frozen=True)
class RuleCase:
    """A file that must produce `code`, and (where meaningful) its twin that must not.

    - `build(tmp_path) -> [paths]` writes the failing checkpoint; `check_paths(paths)` must
      report `code` with exactly the per-target effects `expect_targets` on at least one
      diagnostic (every target with "fails" then has status "fails").
    - `twin`: the same checkpoint minus the defect; `code` must be absent from its report.
      When there is no meaningful twin, `no_twin` says why.
    - `twin_allows`: codes the twin may still report (by default the twin is clean).
    - `message`: a substring the diagnostic's message must contain.
    - `check_kwargs`: extra `check_paths` arguments (e.g. `deep=True` for QC4xx).
    """

    code: str
    name: str
    build: Build
    expect_targets: dict[str, str]
    twin: Build | None = None
    no_twin: str = ""
    message: str | None = None
    twin_allows: tuple[str, ...] = ()
    check_kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.code}-{self.name}"


def eff(sglang: str, comfyui: str) -> dict[str, str]:
    return {"sglang": sglang, "comfyui": comfyui}
