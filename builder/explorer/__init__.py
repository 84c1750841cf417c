"""The HTML explorer: pages for people, rendered by the builder for the published revision.

``chart`` and ``calendar`` are pure layout; ``pages`` turns typed values into HTML bytes with
jinja2; ``site`` decides which pages a new revision changed and writes only those.
"""
