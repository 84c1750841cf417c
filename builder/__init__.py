"""fxev's write side: capture, registry, rendering and publishing of the static tree."""
