"""Model families: which model a checkpoint is (`detect`), from names and shapes, and what its
producers keep in high precision (`table.FAMILIES`). Standard library only."""

from __future__ import annotations

from quantcheck.families.detection import Detection, detect, family_name

__all__ = ["Detection", "detect", "family_name"]
