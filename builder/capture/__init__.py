"""Capture: the one network seam (``fetch``), recording one run as one registry revision, one
module per source, backfill, import, operator writes, cross-checks and plausibility."""
