"""The HTML explorer: pages for people, rendered by the builder for each published revision.

``chart`` and ``calendar`` are pure layout; ``pages`` turns typed values into HTML bytes with
jinja2; ``views`` turns tree bytes and registry records into those values, and keys each page by
what it shows. ``builder.publish.explorer`` decides which pages a new revision changed and writes
only those; ``builder.tree.explorer`` says where they are and which ones a revision serves.
"""
