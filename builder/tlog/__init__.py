"""The transparency log's pure code: RFC 6962 hashing and proofs, C2SP tiles, notes and leaves."""
