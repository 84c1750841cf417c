"""nginx's configuration for the gateway benchmark (pure); ``bench.servers`` runs nginx with it."""

from __future__ import annotations

from pathlib import Path


def nginx_config(prefix: Path, root: Path, port: int, workers: int, as_root: bool) -> str:
    """A minimal nginx serving the files under ``root`` on 127.0.0.1:``port``, in the foreground."""
    temp = [
        f"    {kind}_temp_path {prefix / (kind + '_temp')};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    ]
    lines = [
        "user root;" if as_root else "",
        f"worker_processes {workers};",
        "daemon off;",
        f"pid {prefix / 'nginx.pid'};",
        f"error_log {prefix / 'error.log'} warn;",
        "events { worker_connections 1024; }",
        "http {",
        "    access_log off;",
        "    sendfile on;",
        "    tcp_nopush on;",
        "    keepalive_requests 100000000;",
        "    types { }",
        "    default_type application/json;",
        *temp,
        "    server {",
        f"        listen 127.0.0.1:{port};",
        f"        root {root};",
        "        location / { }",
        "    }",
        "}",
    ]
    return "\n".join(line for line in lines if line) + "\n"
