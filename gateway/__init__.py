"""fxev's read side: a small Sanic app over the published static tree (see README)."""
