#!/usr/bin/env bash
# Set up (scripts/setup.sh), run the static checks (scripts/lint.sh: mypy), then the whole test suite,
# slow end-to-end tests included.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not slow"`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/lint.sh
export PREFECT_HOME="${PREFECT_HOME:-$(mktemp -d)}"
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=120
export PREFECT_SERVER_ANALYTICS_ENABLED=false
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest -q -ra --durations=20 "$@"
