"""Fleet mode's shared state in Redis (docs/operating/fleet.md#redis): the gate that checks a
token and counts its limits in one script (:mod:`~gateway.fleet.gate`), on one pipelined
connection per worker (:mod:`~gateway.fleet.pipe`)."""
