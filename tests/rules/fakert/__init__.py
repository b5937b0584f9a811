"""A fake runtime's rule folder (tests/rules/test_runtimes.py): what adding a runtime takes is
this folder (checks with its `paths` hook, catalog, messages) plus one registered record."""
