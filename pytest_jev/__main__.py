"""`python -m pytest_jev ...` is the `jev-packs` command."""

import sys

from .cli import main

sys.exit(main())
