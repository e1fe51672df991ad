"""``python -m agentcausal`` is the ``agentcausal`` command."""

import sys

from agentcausal.cli import main

sys.exit(main())
