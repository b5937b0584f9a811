"""model: see the modules of this package."""
