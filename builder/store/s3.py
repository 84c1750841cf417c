"""The object store's client, for the write side: it lives in :mod:`builder.objstore.s3`, which
the gateway may import too (it ships its ledger there) while ``builder.store`` stays write-side."""

from builder.objstore.s3 import SHA256_META, THREADS, ObjectStore, parallel, parse_store_url

__all__ = ["SHA256_META", "THREADS", "ObjectStore", "parallel", "parse_store_url"]
