"""The fake runtime's own check (it has no NVFP4 support) and its `paths` hook (what its JSON
summary adds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from quantcheck.diagnostics import Diagnostic
from quantcheck.runtimes import effects

from .catalog import RULE


class FakeChecks:
    """Layer findings for FakeRT only."""

    def __init__(self, ck: Any) -> None:
        self.ck = ck

    def file_findings(self) -> Iterator[Diagnostic]:
        return iter(())

    def layer_findings(self, layer: Any) -> Iterator[Diagnostic]:
        if layer.format == "nvfp4":
            yield Diagnostic(
                RULE,
                "fakert has no nvfp4 support",
                layer=layer.prefix,
                effects=effects(fakert="fails"),
            )


def status_json(ck: Any, release: str | None) -> dict[str, Any]:
    """FakeRT's summary keys: how many layers it would run, at `release` (None: the newest)."""
    return {"layers": len(ck.layers), "release": release or "newest"}
