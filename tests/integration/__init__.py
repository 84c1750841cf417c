"""Gateway and token code against real resources but no server: files under ``tmp_path``, the
real clock, forked or spawned processes (the ledger, the rate limiter's rings, the token store,
the page-token secret)."""
