"""The query parameters (``components/parameters``) and path ids of the OpenAPI document, their
patterns the forms :mod:`gateway.api.params` and :mod:`gateway.api.pagetoken` check."""

from __future__ import annotations

from builder.core.vocabulary import CURRENCIES, SERIES
from gateway.api import pagetoken, params
from gateway.openapi.json_schema import DATE, Schema


def query_param(name: str, description: str, schema: Schema, required: bool = False) -> Schema:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": schema,
    }


def param_ref(name: str) -> Schema:
    return {"$ref": f"#/components/parameters/{name}"}


CURRENCY_ENUM = {"type": "string", "enum": list(CURRENCIES)}
SERIES_ENUM = {"type": "string", "enum": list(SERIES)}
DATE_PARAM = {"type": "string", "format": "date", "pattern": DATE}
CURRENCY_RULE = (
    "Exactly USD. Any other value (usd too) answers 404 UNSUPPORTED_CURRENCY; empty is 400."
)
SERIES_RULE = (
    "publicado or cierre. cierre is served from the revision that put it in production "
    "(fxev series publish cierre); before it, and as of an earlier revision, its queries answer "
    "404 NO_OBSERVATIONS. Any other value answers 404 UNSUPPORTED_SERIES; empty is 400."
)
PARAMETERS: dict[str, Schema] = {
    "currency": query_param("currency", CURRENCY_RULE, CURRENCY_ENUM, required=True),
    "series": query_param("series", SERIES_RULE, SERIES_ENUM, required=True),
    "from": query_param("from", "Inclusive start, YYYY-MM-DD.", DATE_PARAM, required=True),
    "to": query_param(
        "to",
        "Inclusive end, YYYY-MM-DD: not before from and at most the same month and day five "
        "years later (29 February counts as 28 February); else 400.",
        DATE_PARAM,
        required=True,
    ),
    "as_of_revision": query_param(
        "as_of_revision",
        "Answer as the dataset was at this revision: an integer from 1 to the published "
        "revision, written [1-9][0-9]* (no sign, no leading zero); else 400. Omitted: the "
        "published revision. The answer is then immutable (ETag, Cache-Control immutable).",
        {"type": "integer", "minimum": 1},
    ),
    "page_token": query_param(
        "page_token",
        "Opaque: the next_page_token of the previous page, with the same other parameters. It "
        "fixes the revision of the first page, the query and the offset; a corrupt token, one of "
        "another query, or one whose revision differs from as_of_revision is 400.",
        {"type": "string", "pattern": "^" + pagetoken.PAGE_TOKEN.pattern + "$"},
    ),
    "include_annotations": query_param(
        "include_annotations",
        "Exactly true or false (default). true adds annotations, those of the whole range, "
        "on every page.",
        {"type": "boolean", "default": False},
    ),
    "currency_filter": query_param("currency", "Filter; validated as in /v1/rates.", CURRENCY_ENUM),
    "series_filter": query_param("series", "Filter; validated as in /v1/rates.", SERIES_ENUM),
    "from_filter": query_param("from", "Inclusive start date filter.", DATE_PARAM),
    "to_filter": query_param("to", "Inclusive end date filter, not before from.", DATE_PARAM),
    "open": query_param(
        "open",
        "Exactly true (default: abierta and reconocida only) or false (all, resuelta too).",
        {"type": "boolean", "default": True},
    ),
    "at": query_param(
        "at",
        "Instant to resolve: YYYY-MM-DDTHH:MM, optional :SS and any number of decimals (read "
        "to the microsecond), then Z or +HH:MM/-HH:MM (an unencoded +, which arrives as a "
        "space, is read as +).",
        {
            "type": "string",
            "format": "date-time",
            "pattern": "^" + params.INSTANT.pattern + "$",
        },
        required=True,
    ),
}


PATH_UUID = "^" + params.UUID.pattern.replace("a-f", "a-fA-F") + "$"


def path_id(name: str, what: str) -> Schema:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": f"UUID of {what}: 36 characters, hyphenated, any case. Anything else is "
        f'the 422 body with loc ["path", "{name}"]; an unknown one is 404 NOT_FOUND.',
        "schema": {"type": "string", "format": "uuid", "pattern": PATH_UUID},
    }
