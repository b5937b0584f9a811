"""The package version: the one place it is written (pyproject.toml reads it from here), and
the head every JSON document carries it in.

A leaf module: it imports nothing, so any module may import it without a cycle.
"""

__version__ = "0.1.0"


def document_head(kind: str, schema_version: int) -> dict[str, object]:
    """The keys every JSON document quantcheck prints or writes starts with."""
    return {
        "schema_version": schema_version,
        "tool": "quantcheck",
        "tool_version": __version__,
        "kind": kind,
    }
