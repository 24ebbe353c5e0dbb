"""``python -m scaling_lib.grading strip | variants | grade ...`` (see ``_cli``)."""
import sys

from ._cli import main

sys.exit(main())
