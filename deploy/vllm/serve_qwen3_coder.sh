#!/usr/bin/env bash
# Serve Qwen3-Coder-30B-A3B-Instruct with vLLM for the `paper` routing's LCE stage: the qwen3-coder-30b
# preset of serve_model.sh (2 GPUs, port 8000, max length 65536; settings and extra arguments as there).
#
#   deploy/vllm/serve_qwen3_coder.sh                                  # blocks until Ctrl-C
#   VLLM_TP=1 VLLM_PORT=8001 deploy/vllm/serve_qwen3_coder.sh --max-num-seqs 64
exec bash "$(dirname "${BASH_SOURCE[0]}")/serve_model.sh" qwen3-coder-30b "$@"
