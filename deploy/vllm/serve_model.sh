#!/usr/bin/env bash
# Serve one of the papers' open-weight models with vLLM for its agentcausal profile (deploy/README.md).
#
#   pip install '.[vllm]'                                  # on the GPU host only; nothing in agentcausal imports vllm
#   deploy/vllm/serve_model.sh qwen3-coder-30b             # DCFA's LCE model (profile vllm), port 8000
#   deploy/vllm/serve_model.sh deepseek-r1-32b             # profile vllm-deepseek-r1-32b, port 8001
#   VLLM_TP=4 deploy/vllm/serve_model.sh qwen3-235b --max-num-seqs 64   # extra args go to vllm
#
# Presets (model, profile, port, tensor-parallel GPUs, max model length, reasoning parser):
#   qwen3-coder-30b  Qwen/Qwen3-Coder-30B-A3B-Instruct        vllm                        8000  2  65536  -
#   deepseek-r1-32b  deepseek-ai/DeepSeek-R1-Distill-Qwen-32B vllm-deepseek-r1-32b        8001  2  32768  deepseek_r1
#   qwen3-235b       Qwen/Qwen3-235B-A22B                     vllm-qwen3-235b[-nothink]   8002  8  32768  qwen3
#   deepseek-r1      deepseek-ai/DeepSeek-R1                  vllm-deepseek-r1            8003  8  65536  deepseek_r1
# The max model length is the profile's context_window. A reasoning model is served with vLLM's reasoning
# parser: its reasoning comes back apart from the answer, and the JSON schema of a structured request is
# enforced on the answer only (without the parser, a schema-constrained reply could not reason at all; a
# reply with a visible <think> block is still read: the gateway removes the block before parsing).
#
# It starts `vllm serve`, polls GET /health until the engine is up (model download and load can take
# many minutes the first time), checks that GET /v1/models lists the served name, prints the variables
# that point agentcausal at it, then waits on vllm. Exit 1 if vllm dies or is not healthy in time.
#
# Settings (environment; each overrides its preset value):
#   VLLM_MODEL, VLLM_TP, VLLM_PORT, VLLM_MAX_LEN, VLLM_REASONING_PARSER ("none": no parser)
#   VLLM_HOST         0.0.0.0
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

preset="${1:-}"
case "$preset" in
  qwen3-coder-30b) p_model=Qwen/Qwen3-Coder-30B-A3B-Instruct; p_profiles=vllm; p_port=8000; p_tp=2
                   p_len=65536; p_parser=none; p_routing=paper ;;
  deepseek-r1-32b) p_model=deepseek-ai/DeepSeek-R1-Distill-Qwen-32B; p_profiles=vllm-deepseek-r1-32b
                   p_port=8001; p_tp=2; p_len=32768; p_parser=deepseek_r1; p_routing=dcfa-deepseek-r1-32b ;;
  qwen3-235b)      p_model=Qwen/Qwen3-235B-A22B; p_profiles="vllm-qwen3-235b vllm-qwen3-235b-nothink"
                   p_port=8002; p_tp=8; p_len=32768; p_parser=qwen3; p_routing=dcfa-qwen3-235b ;;
  deepseek-r1)     p_model=deepseek-ai/DeepSeek-R1; p_profiles=vllm-deepseek-r1; p_port=8003; p_tp=8
                   p_len=65536; p_parser=deepseek_r1; p_routing=dcfa-deepseek-r1 ;;
  *) echo "usage: $0 qwen3-coder-30b|deepseek-r1-32b|qwen3-235b|deepseek-r1 [vllm serve arguments...]" >&2
     exit 2 ;;
esac
shift

MODEL="${VLLM_MODEL:-$p_model}"
TP="${VLLM_TP:-$p_tp}"
HOST="${VLLM_HOST:-0.0.0.0}"
PORT="${VLLM_PORT:-$p_port}"
MAX_LEN="${VLLM_MAX_LEN:-$p_len}"
PARSER="${VLLM_REASONING_PARSER:-$p_parser}"
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
if [[ "$PARSER" != "none" ]]; then
  args+=(--reasoning-parser "$PARSER")
fi
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
for prof in $p_profiles; do
  var="$(tr 'a-z.-' 'A-Z__' <<<"$prof")"
  echo "  export AGENTCAUSAL_PROFILE_${var}_BASE_URL=$url"
done
[[ -n "${VLLM_API_KEY:-}" ]] && echo "  export VLLM_API_KEY=...   # the same key"
[[ "$MODEL" != "$p_model" ]] && echo "  (a model other than the preset's: also set AGENTCAUSAL_PROFILE_${var}_MODEL=$MODEL)"
echo "  agentcausal attribute data/who_and_when --method dcfa --routing $p_routing"
echo "  python deploy/vllm/check_endpoint.py --url $url --profile ${p_profiles%% *}   # two structured calls"
trap - EXIT
wait "$pid"
