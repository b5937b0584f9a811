"""QC2xx: marker rules (catalog), their checks and the marker each kind of reader sees (views)."""
