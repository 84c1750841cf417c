"""The static tree's format and its verified reader. Nothing here writes a tree."""
