"""Operational state outside the registry: the alert store and the machine's health (disk, clock,
NTP). The gateway reads both; only the write side writes them."""
