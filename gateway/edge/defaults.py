"""What ``fxev edge config`` assumes when not told: where the edge listens, the one gateway it
passes to, and its cache's folder under ``FXEV_HOME``. Kept apart from :mod:`gateway.edge.config`
so the command line declares its arguments without loading the gateway."""

DEFAULT_LISTEN = "127.0.0.1:8080"
DEFAULT_UPSTREAM = "127.0.0.1:8000"
CACHE_FOLDER = "edge-cache"
