"""`python -m memory_platform_client` runs memoryctl."""

from memory_platform_client.cli import main

raise SystemExit(main())
