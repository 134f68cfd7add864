import sys

from smelt.cli import main

sys.exit(main())
