"""Moving a project's data: export to and import from a JSON-lines file (`sections.py` lists
what travels), export jobs over the API, and backups of the whole database (docs/portability.md).

Export spans every app, so this app sits above them all (INSTALLED_APPS order,
docs/architecture.md)."""
