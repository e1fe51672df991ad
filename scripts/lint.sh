#!/usr/bin/env bash
# Static checks, run by scripts/test.sh before the tests (after scripts/setup.sh): mypy on the library,
# its tasks and flows, configured in pyproject.toml ([tool.mypy]). Any error fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "agentcausal lint: mypy (agentcausal/, flows/, tasks/)..."
.venv/bin/python -m mypy
