"""The shipped edge (docs/operating/edge.md): the requests only the edge may make, as the
gateway answers them (:mod:`~gateway.edge.steps`), and the nginx configuration
``fxev edge config`` prints (:mod:`~gateway.edge.config`, from the text in
:mod:`~gateway.edge.nginx`, :mod:`~gateway.edge.maps` and :mod:`~gateway.edge.refusals`; what
it assumes when not told, :mod:`~gateway.edge.defaults`)."""
