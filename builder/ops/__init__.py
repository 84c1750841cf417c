"""Operational state outside the registry: the alert store (and its state shared through Redis in
fleet mode), the machine's health (disk, clock, NTP), the port checks of the commands that
serve, and the one factory of redis-py clients. The gateway reads the alerts and the health;
only the write side writes them."""
