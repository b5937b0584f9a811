"""The package version: the one place it is written (pyproject.toml reads it from here).

A leaf module: it imports nothing, so any module may import it without a cycle.
"""

__version__ = "0.1.0"
