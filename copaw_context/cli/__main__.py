"""``python -m copaw_context.cli``."""

import sys

from copaw_context.cli import main

sys.exit(main())
