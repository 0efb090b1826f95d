import sys

from medsim.cli import main

sys.exit(main())
