"""Publishing runs: a static site of executed notebooks with their verdicts, provenance, downloads
and history (`benchbook publish`), and a read-only local server for it (`benchbook serve`)."""
