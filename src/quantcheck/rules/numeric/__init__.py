"""QC4xx: numeric rules (catalog), the deep checks and the gate in front of every numeric path."""
