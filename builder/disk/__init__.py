"""Durable files: write-once and replace-in-place writes, content-addressed stores, and the named
crash points the crash-safety tests kill a process at."""
