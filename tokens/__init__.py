"""Bearer tokens: issuing, hashing, revoking and checking (see README)."""
