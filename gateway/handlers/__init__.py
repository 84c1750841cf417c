"""What answers a request: the gate in front (token, limit, revision mark:
:mod:`~gateway.handlers.access`), the ``/v1`` routes and their table
(:mod:`~gateway.handlers.routes`), the transparency log's routes, the explorer's, the ledger's
record of each answer (:mod:`~gateway.handlers.ledgering`), the published revision as a worker
sees it, and the edge's auth lane beside Sanic (:mod:`~gateway.handlers.lane`)."""
