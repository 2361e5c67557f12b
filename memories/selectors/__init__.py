"""Reads of memories. Every function takes `project=` so no read can cross tenants."""
