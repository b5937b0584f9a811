"""Renderers for reports: one module per output format."""

from __future__ import annotations

from collections.abc import Callable

from quantcheck.results import Report

Renderer = Callable[[Report], str]


def get_renderer(name: str) -> Renderer:
    """The renderer for text, json, sarif or github."""
    if name == "json":
        from quantcheck.render.json_out import render
    elif name == "sarif":
        from quantcheck.render.sarif import render
    elif name == "github":
        from quantcheck.render.github import render
    else:
        from quantcheck.render.text import render
    return render


#: Report renderers by `--format` name.
RENDERERS = ("text", "json", "sarif", "github")
