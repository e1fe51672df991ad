#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main job on the embedded default model:
# failure attribution (three Who&When baselines + DCFA) on real traces and
# causal discovery (MAC + statistical baselines). Results go to runs/demo-*/.
# Extra arguments go to `agentcausal demo` (see `agentcausal demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=${PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS:-120}
export PREFECT_SERVER_ANALYTICS_ENABLED=${PREFECT_SERVER_ANALYTICS_ENABLED:-false}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export PREFECT_LOGGING_LEVEL=${PREFECT_LOGGING_LEVEL:-WARNING}
# The Who&When benchmark: the setting if given, else data/who_and_when, else the
# development split that this workplace keeps beside the repository.
if [ -z "${AGENTCAUSAL_WHO_AND_WHEN_DIR:-}" ] && [ ! -d data/who_and_when ] && [ -d ../shared/data/who_and_when ]; then
  export AGENTCAUSAL_WHO_AND_WHEN_DIR=../shared/data/who_and_when
fi
exec .venv/bin/agentcausal demo "$@"
