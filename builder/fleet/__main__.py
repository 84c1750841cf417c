"""``make fleet``: start the topology, print a ``curl`` line per entry point, and stop every
process it started on Ctrl-C (SIGINT) or SIGTERM."""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from builder.core.arguments import OneLineParser, port_or_free, ports_or_free
from builder.core.errors import FxevError, UsageError
from builder.fleet.processes import HOST, FleetRunning, say
from builder.fleet.topology import Topology, plan
from builder.ops.ports import refuse_unusable_port

LOCK_FILE = "fleet.lock"


def check_ports(ports: Sequence[int]) -> None:
    chosen = [port for port in ports if port]  # 0: a free one, each its own
    for port in chosen:
        if chosen.count(port) > 1:
            raise UsageError(
                f"port {port} is given twice: each gateway and the edge need their own"
            )
    for port in ports:
        refuse_unusable_port(
            HOST,
            port,
            "pick others (make fleet FLEET_PORTS=A,B EDGE_PORT=C, or --ports and --edge-port)",
        )


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m builder.fleet",
        description=(
            "make fleet: Redis, the store, the operator's home, two gateway hosts and the edge"
        ),
    )
    parser.add_argument("--root", type=Path, default=Path("var/fleet"), help="the fleet's folder")
    parser.add_argument(
        "--ports", type=ports_or_free, default=[8001, 8002],
        help="the gateways' ports, comma-separated, one per host (default 8001,8002)",
    )  # fmt: skip
    parser.add_argument(
        "--edge-port", type=port_or_free, default=8080,
        help="the edge's port, in front of the gateways (default 8080; 0: a free one)",
    )  # fmt: skip
    return parser


# Where each host's stores are, and how they reach Redis and the store: the topology's to say.
OWNED = ("FXEV_HOME", "FXEV_SITE", "FXEV_REDIS_URL", "FXEV_STORE_URL", "FXEV_S3_ENDPOINT")


def passed_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The caller's ``FXEV_*`` settings (limits, sources, ...) for every host of the fleet."""
    return {k: v for k, v in environ.items() if k.startswith("FXEV_") and k not in OWNED}


def hold(root: Path) -> int:
    """Lock ``root`` for this run, or :class:`FleetRunning`; the lock goes with the process,
    however it ends. The descriptor is the lock: keep it open."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise FleetRunning(
            f"a fleet already runs in {root}: stop it (Ctrl-C where it runs), or give this one"
            " a folder of its own (make fleet FLEET_ROOT=DIR, or --root DIR)"
        ) from None
    return fd


def interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        ports = args.ports
        check_ports([*ports, args.edge_port])
        topology = plan(
            args.root, gateway_ports=ports, settings=passed_settings(os.environ),
            edge_port=args.edge_port,
        )  # fmt: skip
        hold(topology.root)
    except (FxevError, ValueError) as error:
        return refused(error)
    # Ctrl-C and SIGTERM alike, even where a shell started us with SIGINT ignored.
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    failed: FxevError | None = None
    try:
        say(f"starting the fleet in {topology.root} (logs there)")
        topology.start()  # on a failure or an interrupt, it stops what it started
        announce(topology)
        watch(topology)
    except KeyboardInterrupt:
        pass
    except FxevError as error:  # a process that did not start: one line, its log named
        failed = error
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the stop short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        topology.stop()
    if failed is not None:
        return refused(failed)
    say("fleet stopped")
    return 0


def announce(topology: Topology) -> None:
    """The token, a ``curl`` line per entry point, and the operator's settings file."""
    print(f"\nFleet token (shown once): {topology.token}\n", flush=True)
    for line in topology.curl_lines():
        print(line, flush=True)
    env_file = topology.write_operator_env()
    print(
        f"\nThe operator's commands (fxev requests show, alerts, tick, build, publish) act on"
        f" the fleet after:\n. {env_file}",
        flush=True,
    )
    print("\nCtrl-C stops every process of the fleet.", flush=True)


def refused(error: FxevError | ValueError) -> int:
    print(f"fxev fleet: {error}", file=sys.stderr)
    return getattr(error, "exit_code", 1)


def watch(topology: Topology) -> None:
    """Until interrupted: one line for each process that exits by itself."""
    reported: set[str] = set()
    while True:
        for service in topology.exited():
            if service.name not in reported:
                reported.add(service.name)
                say(f"{service.name} exited; see {service.log}")
        time.sleep(0.5)


if __name__ == "__main__":
    raise SystemExit(main())
