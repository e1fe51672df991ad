"""``python -m agentcausal`` is the ``agentcausal`` command."""

import sys

from agentcausal_cli import main

sys.exit(main())
