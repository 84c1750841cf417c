"""The pure core: the API's vocabulary, canonical values, Peru's business calendar, settings and
the write side's error tree. Imports no other fxev code."""
