"""The API's own rules as pure functions: query and path parameters, page tokens, the
envelope, freshness. No I/O but the page-token secret's file; no Sanic."""
