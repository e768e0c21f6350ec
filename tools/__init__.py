"""Developer tools that need torch (a test-only dependency), kept out of the ``ember`` package,
which never imports torch."""
