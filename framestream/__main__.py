import sys

from framestream.service.cli import main

sys.exit(main())
