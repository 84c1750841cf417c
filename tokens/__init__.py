"""Bearer tokens: issuing, hashing, revoking and checking (see README).

The store (``tokens.store``) keeps only a SHA-256 of each token; ``tokens.cli`` adds
``fxev token issue|revoke|list``. The gateway opens one :class:`TokenStore` per worker process and
calls :meth:`TokenStore.check` on every request.
"""

from tokens.store import (
    IssuedToken,
    TokenConflict,
    TokenError,
    TokenNotFound,
    TokenRecord,
    TokenStore,
    parse_token_id,
    token_hash,
)

__all__ = [
    "IssuedToken",
    "TokenConflict",
    "TokenError",
    "TokenNotFound",
    "TokenRecord",
    "TokenStore",
    "parse_token_id",
    "token_hash",
]
