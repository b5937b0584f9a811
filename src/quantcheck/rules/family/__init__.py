"""The model family's contract (QC86x): catalog.py and checks.py."""
