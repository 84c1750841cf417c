"""The registry (revisioned SQLite store) and the content-addressed evidence blobs."""
