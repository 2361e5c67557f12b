"""Compatibility layers: other memory products' client APIs served by this platform's services
(mem0 in `compat.mem0`). The top layer: it imports the apps, no app imports it."""
