import sys

from dtype_lint.cli import main

sys.exit(main())
