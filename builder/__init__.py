"""fxev's write side: capture sources, keep the revisioned registry, render the static tree."""
