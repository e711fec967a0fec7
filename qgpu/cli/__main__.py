"""`python -m qgpu.cli ...`: the same as the `qgpu` command."""

import sys

from qgpu.cli import main

sys.exit(main())
