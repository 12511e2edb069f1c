import sys

from framestream.cli import main

sys.exit(main())
