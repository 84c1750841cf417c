"""Per-token rate limits: the rule as pure arithmetic (:mod:`~gateway.limits.rule`) and one
host's store of it, shared by the workers (:mod:`~gateway.limits.ring`). Fleet mode keeps the
same rule in Redis (:mod:`gateway.fleet.gate`)."""
