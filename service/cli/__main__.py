"""``python -m service.cli``: the ``azulsim`` console script."""

import sys

from .app import main

sys.exit(main())
