#!/usr/bin/env bash
# Serve Qwen3-Coder-30B-A3B-Instruct with vLLM for the `paper` routing's LCE stage (deploy/README.md).
#
#   pip install '.[vllm]'                     # on the GPU host only; nothing in agentcausal imports vllm
#   deploy/vllm/serve_qwen3_coder.sh          # 2 GPUs, port 8000; blocks until Ctrl-C
#   VLLM_TP=1 VLLM_PORT=8001 deploy/vllm/serve_qwen3_coder.sh --max-num-seqs 64   # extra args go to vllm
#
# It starts `vllm serve`, polls GET /health until the engine is up (model download and load can take
# many minutes the first time), checks that GET /v1/models lists the served name, prints the variables
# that point agentcausal at it, then waits on vllm. Exit 1 if vllm dies or is not healthy in time.
#
# Settings (environment):
#   VLLM_MODEL        Qwen/Qwen3-Coder-30B-A3B-Instruct   (the `vllm` profile's model name)
#   VLLM_TP           2        tensor-parallel size (GPUs); 1 fits on one 80 GB+ GPU in bf16 (~61 GB weights)
#   VLLM_HOST/PORT    0.0.0.0 / 8000
#   VLLM_MAX_LEN      65536    max model length (the profile's context_window; the model allows 262144)
#   VLLM_GPU_UTIL     0.90     --gpu-memory-utilization
#   VLLM_API_KEY      unset    if set, vllm requires it and agentcausal sends it (profile api_key_env)
#   VLLM_HEALTH_TIMEOUT_S 1800 seconds to wait for /health; VLLM_HEALTH_POLL_S 5 between polls
#   VLLM_BIN          vllm     the executable
#
# Structured outputs: agentcausal sends `response_format: {"type": "json_schema", ...}` (OpenAI style);
# vLLM >= 0.12 enforces it with its structured-output backend (xgrammar by default). The old `guided_json`
# request field was removed in vLLM 0.12 and is not used. Automatic prefix caching is on by default in
# vLLM's V1 engine; `--enable-prefix-caching` below only makes it explicit.
set -euo pipefail

MODEL="${VLLM_MODEL:-Qwen/Qwen3-Coder-30B-A3B-Instruct}"
TP="${VLLM_TP:-2}"
HOST="${VLLM_HOST:-0.0.0.0}"
PORT="${VLLM_PORT:-8000}"
MAX_LEN="${VLLM_MAX_LEN:-65536}"
GPU_UTIL="${VLLM_GPU_UTIL:-0.90}"
HEALTH_TIMEOUT_S="${VLLM_HEALTH_TIMEOUT_S:-1800}"
HEALTH_POLL_S="${VLLM_HEALTH_POLL_S:-5}"
VLLM_BIN="${VLLM_BIN:-vllm}"

args=(serve "$MODEL"
      --served-model-name "$MODEL"
      --tensor-parallel-size "$TP"
      --host "$HOST" --port "$PORT"
      --max-model-len "$MAX_LEN"
      --gpu-memory-utilization "$GPU_UTIL"
      --enable-prefix-caching)
if [[ -n "${VLLM_API_KEY:-}" ]]; then
  args+=(--api-key "$VLLM_API_KEY")
fi

echo "starting: $VLLM_BIN ${args[*]} $*" >&2
"$VLLM_BIN" "${args[@]}" "$@" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' INT TERM EXIT

# GET a URL with the API key; prints the body, fails on non-2xx or no connection (python: always on a vLLM host)
get() {
  python3 - "$1" <<'PY'
import os, sys, urllib.request
req = urllib.request.Request(sys.argv[1])
if os.environ.get("VLLM_API_KEY"):
    req.add_header("Authorization", "Bearer " + os.environ["VLLM_API_KEY"])
try:
    with urllib.request.urlopen(req, timeout=5) as r:
        sys.stdout.write(r.read().decode())
except Exception:
    sys.exit(1)
PY
}

base="http://127.0.0.1:${PORT}"
deadline=$((SECONDS + HEALTH_TIMEOUT_S))
until get "$base/health" >/dev/null; do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "vllm exited before it became healthy" >&2
    exit 1
  fi
  if (( SECONDS >= deadline )); then
    echo "vllm not healthy after ${HEALTH_TIMEOUT_S}s" >&2
    exit 1
  fi
  sleep "$HEALTH_POLL_S"
done

models="$(get "$base/v1/models" || true)"
if ! grep -qF "\"$MODEL\"" <<<"$models"; then
  echo "vllm is up but /v1/models does not list $MODEL" >&2
  exit 1
fi

url="http://$(hostname -f 2>/dev/null || hostname):${PORT}/v1"
echo "ready: $MODEL at $url (healthy after ${SECONDS}s)"
echo "on the machines that run agentcausal:"
echo "  export AGENTCAUSAL_PROFILE_VLLM_BASE_URL=$url"
[[ -n "${VLLM_API_KEY:-}" ]] && echo "  export VLLM_API_KEY=...   # the same key"
echo "  agentcausal attribute data/who_and_when --method dcfa --routing paper"
echo "  python deploy/vllm/check_endpoint.py --url $url   # one structured call through the gateway"
trap - EXIT
wait "$pid"
