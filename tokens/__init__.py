"""Bearer tokens: issuing, hashing, revoking and checking (see README).

The store (``tokens.store``) keeps only a SHA-256 of each token; ``tokens.cli`` adds
``fxev token issue|revoke|list`` (handled in ``tokens.commands``). On one host a gateway worker
opens one :class:`tokens.store.TokenStore` and checks every request's token through
``tokens.cache.CachedTokenCheck``, which re-reads the store only when it changed; in fleet mode
the records are in Redis (``tokens.redis_store``) and the gateway checks them there, in the same
round trip that counts the request.
"""
