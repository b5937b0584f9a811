"""convert: see the modules of this package."""
