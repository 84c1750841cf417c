"""The consumer's end-to-end verifier (``fxev verify``): fetches an observation and its evidence
over HTTP, re-parses the bytes and checks every hash. Imports no write-side module."""
