"""Rendering: registry records -> the exact bytes the API and the explorer serve. Pure."""
