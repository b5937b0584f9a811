"""explain: see the modules of this package."""
