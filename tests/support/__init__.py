"""Code the tests share with the benchmarks: ``bench`` may import it; no test imports ``bench``."""
