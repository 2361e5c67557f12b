#!/usr/bin/env python
"""Django's command-line utility for Memory Platform."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryplatform.settings")
    if sys.argv[1:2] == ["serve"]:  # serve runs daphne in this process: pooled connections
        os.environ.setdefault("MEMORY_DB_POOL", "true")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except Exception as exc:  # a database never migrated: say so, not a traceback
        from platformcore.db.rls import first_start_message

        message = first_start_message(exc)
        if message is None:
            raise
        sys.exit(f"Error: {message}")


if __name__ == "__main__":
    main()
