"""Fleet mode's object store: the published tree in an S3-compatible bucket.

``s3`` is the client (``FXEV_STORE_URL``, ``FXEV_S3_ENDPOINT``), ``keys`` the layout of the
bucket, ``delta`` what a range of revisions added to the tree, ``publish`` (``fxev publish``,
on the operator's host) and ``mirror`` (``fxev mirror``, on each gateway host); ``commands``
is what ``builder.cli`` calls. See ``docs/operating/fleet.md``.
"""
