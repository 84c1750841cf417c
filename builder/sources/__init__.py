"""Source adapters: pure parsers of the bytes each official source publishes."""
