"""OpenAPI links: from the ids an answer carries to the operations that take them.

A client (or a stateful fuzzer) follows them from a page of rates to an item's observation, from
an observation to its evidence, its chain and the observation it was cross-checked against. A
link's parameter is a runtime expression naming a field of the 200 answer's body; JSON pointers
cannot say "every item", so a link names the first one of an array.
"""

from __future__ import annotations

from typing import Any

OBSERVATION = "getObservation"
EVIDENCE = "getEvidence"


def link(operation_id: str, parameter: str, pointer: str, description: str) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "parameters": {parameter: "$response.body#" + pointer},
        "description": description,
    }


def to_observation(pointer: str, description: str) -> dict[str, Any]:
    return link(OBSERVATION, "obs_id", pointer, description)


def to_evidence(pointer: str, description: str) -> dict[str, Any]:
    return link(EVIDENCE, "ev_id", pointer, description)


# path -> the links of its GET 200 answer, by name.
LINKS: dict[str, dict[str, dict[str, Any]]] = {
    "/v1/rates": {
        "FirstItemObservation": to_observation(
            "/items/0/observacion_id", "The observation behind the first item."
        ),
        "FirstItemCounterpart": to_observation(
            "/items/0/cotejos/0/contraparte_observacion_id",
            "The observation the first item was first cross-checked against.",
        ),
    },
    "/v1/rates/latest": {
        "Observation": to_observation("/observacion_id", "The observation behind the value."),
        "Counterpart": to_observation(
            "/cotejos/0/contraparte_observacion_id",
            "The observation the value was first cross-checked against.",
        ),
    },
    "/v1/observations/{obs_id}": {
        "Evidence": to_evidence(
            "/observacion/evidencia_id", "The bytes the observation was parsed from."
        ),
        "OldestAncestor": to_observation(
            "/cadena/ancestros/0/id",
            "The first observation of the chain, which this one supersedes.",
        ),
        "NearestSuccessor": to_observation(
            "/cadena/sucesoras/0/id", "The observation that superseded this one."
        ),
        "Counterpart": to_observation(
            "/cotejos/0/contraparte_observacion_id",
            "The observation of the other source this one was first cross-checked against.",
        ),
    },
}


def with_links(path: str, responses: dict[str, Any]) -> dict[str, Any]:
    """``responses`` of ``path``'s GET with the links of its 200 answer (a new dict; the
    responses given are not changed, so HEAD's, made from them, stay without links)."""
    links = LINKS.get(path)
    if not links or "200" not in responses:
        return responses
    return responses | {"200": responses["200"] | {"links": links}}
