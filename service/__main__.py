"""``python -m service``: the ``azulsim`` console script (used to start the stack's processes)."""

import sys

from .cli import main

sys.exit(main())
