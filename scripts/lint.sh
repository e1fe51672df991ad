#!/usr/bin/env bash
# Static checks, run by scripts/test.sh before the tests (after scripts/setup.sh): ruff (lint and format) on the
# whole tree, the import contracts of .importlinter (import-linter), the size rules (scripts/size_rules.py), then
# mypy on the library, its tasks and flows; configured in pyproject.toml ([tool.ruff], [tool.mypy]).
# Any error fails the run. MYPY_CACHE_DIR=/dev/null (as .ci/run sets) writes no mypy cache.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "agentcausal lint: ruff (lint and format, whole tree)..."
.venv/bin/python -m ruff check --quiet .
.venv/bin/python -m ruff format --check --quiet .
echo "agentcausal lint: import contracts (.importlinter)..."
.venv/bin/lint-imports --no-cache --no-logo
echo "agentcausal lint: size rules (scripts/size_rules.py)..."
.venv/bin/python scripts/size_rules.py
echo "agentcausal lint: mypy (agentcausal/, agentcausal_cli/, flows/, tasks/)..."
.venv/bin/python -m mypy --show-traceback
