"""Fleet mode's object store: the published tree in an S3-compatible bucket.

The client (``FXEV_STORE_URL``, ``FXEV_S3_ENDPOINT``) is :mod:`builder.objstore.s3`, which the
gateway's ledger shipping shares. ``keys`` is the layout of the bucket, ``delta`` what a range
of revisions added to the tree, ``publish`` (``fxev publish``, on the operator's host) and
``mirror`` (``fxev mirror``, on each gateway host), ``mirrors`` which revision each live mirror
serves (in Redis, for ``fxev publish`` to wait on); ``commands`` is what ``builder.commands`` calls.
See ``docs/operating/fleet.md``.
"""
