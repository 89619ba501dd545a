"""`python -m seahorse` runs the `seahorse` command."""

import sys

from .adapters.cli import main

sys.exit(main())
