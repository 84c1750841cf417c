"""The request ledger (docs/operating/ledger.md): each worker's durable record of what it sent
(:mod:`~gateway.ledger.recording`), the process that writes it (:mod:`~gateway.ledger.writer`),
the files as readers see them (:mod:`~gateway.ledger.reading`) and, in fleet mode, its shipping
to the object store (:mod:`~gateway.ledger.shipping`)."""
