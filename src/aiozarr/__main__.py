"""`python -m aiozarr`: the command line."""

import sys

from aiozarr.cli import main

sys.exit(main())
