"""HTTP messages as the gateway reads and sends them: a request's head read by RFC 9112's
rules, the bytes response, sending stored bytes with their headers (ETag, ``Repr-Digest``,
CORS, cache headers), and the fresh request id and instant of each answer."""
