"""Publishing: the builder, the tree writer, the explorer writer, the site lock and the WARC export.
Everything that turns the registry into files for others."""
