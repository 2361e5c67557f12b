"""The SQL-native entity memory server's REST API and Server-Sent Events, at its own
unversioned paths (`/api/memories`, `/api/entities`, `/api/relations`, `/api/analytics/...`,
`/api/events`), over the platform's services: a client written for that server works against
this one with its base URL changed (docs/compat-sqlnative.md)."""
