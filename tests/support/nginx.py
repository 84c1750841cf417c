"""nginx's configurations for the benchmarks (pure); ``bench.servers`` runs nginx with them:
one serving files, one passing every request to an upstream with nothing else configured."""

from __future__ import annotations

from pathlib import Path


def nginx_config(prefix: Path, root: Path, port: int, workers: int, as_root: bool) -> str:
    """A minimal nginx serving the files under ``root`` on 127.0.0.1:``port``, in the foreground."""
    http = ["    sendfile on;", "    tcp_nopush on;", "    types { }"]
    http.append("    default_type application/json;")
    server = [f"        root {root};", "        location / { }"]
    return _config(prefix, port, workers, as_root, http, server)


def proxy_config(prefix: Path, upstream: str, port: int, workers: int, as_root: bool) -> str:
    """A minimal nginx passing every request to ``upstream`` (``HOST:PORT``) over kept-alive
    HTTP/1.1 connections, uncached: the least one proxy hop costs, under any edge."""
    http = ["    upstream origin {", f"        server {upstream};", "        keepalive 64;"]
    http.append("    }")
    server = [
        "        location / {",
        "            proxy_http_version 1.1;",
        '            proxy_set_header Connection "";',
        "            proxy_pass http://origin;",
        "        }",
    ]
    return _config(prefix, port, workers, as_root, http, server)


def _config(
    prefix: Path, port: int, workers: int, as_root: bool, http: list[str], server: list[str]
) -> str:
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
        "    keepalive_requests 100000000;",
        *http,
        *temp,
        "    server {",
        f"        listen 127.0.0.1:{port};",
        *server,
        "    }",
        "}",
    ]
    return "\n".join(line for line in lines if line) + "\n"
