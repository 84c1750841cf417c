"""The OpenAPI 3.1 document of ``/v1``: the one source of truth, built once from this package.

``DOCUMENT`` is the dict, ``BODY`` its bytes as served at ``PATH`` (``/v1/openapi.json``, public,
docs/decisions.md#public-endpoints), ``no-store`` like every answer but as-of ones, evidence
and the log's, ``SHA256`` their SHA-256.

::

    json_schema    JSON Schema constructors and the shared patterns
    schemas        every body the API sends (components/schemas)
    headers        response headers (components/headers) and each answer's set
    parameters     query parameters (components/parameters) and path ids
    responses      shared error responses (components/responses) and their constructors
    operations     one Operation per path, as its get and head objects
    document       the description and the assembly: DOCUMENT, BODY, SHA256
"""

from __future__ import annotations

from gateway.openapi.document import API_VERSION, BODY, DOCUMENT, SHA256, build_document
from gateway.openapi.headers import HEADERS
from gateway.openapi.operations import OPERATIONS, PATH
from gateway.openapi.parameters import PARAMETERS
from gateway.openapi.responses import RESPONSES
from gateway.openapi.schemas import SCHEMAS

__all__ = [
    "API_VERSION",
    "BODY",
    "DOCUMENT",
    "HEADERS",
    "OPERATIONS",
    "PARAMETERS",
    "PATH",
    "RESPONSES",
    "SCHEMAS",
    "SHA256",
    "build_document",
]
