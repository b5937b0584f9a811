"""QC3xx: layer rules (catalog), their checks, layer kinds and per-layer memos."""
