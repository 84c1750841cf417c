"""The object store's client (``FXEV_STORE_URL``, ``FXEV_S3_ENDPOINT``), shared by the write
side's ``fxev publish`` and ``fxev mirror`` (``builder/store/``) and the gateway's shipped ledger
(``gateway/ledger/shipping.py``). It imports only the core, so the gateway may use it without
reaching the write side.
"""
