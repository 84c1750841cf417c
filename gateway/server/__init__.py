"""Serving: Sanic's HTTP/1.1 connection with the gateway's reading of a head
(:mod:`~gateway.server.http1`), and N supervised worker processes
(:mod:`~gateway.server.serving`)."""
