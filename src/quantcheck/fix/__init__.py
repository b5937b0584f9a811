"""fix: see the modules of this package."""
