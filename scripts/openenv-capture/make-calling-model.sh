#!/usr/bin/env bash
# Makes the fixture model that calls the tools of OpenEnv's grid_world, maze, connect4 and finqa: starts
# their servers from OpenEnv's source (serve.sh), plays scripted episodes through the classes webgrpo trains
# (calling-transcripts.ts, webgrpo's own SFT tokenization), then fine-tunes BASE on those ids in PyTorch
# (make-calling-model.py) and writes an HF checkpoint folder (same config and tokenizer as BASE) to OUT_DIR.
#
# usage: scripts/openenv-capture/make-calling-model.sh OPENENV_SRC OPENENV_VENV TORCH_VENV OUT_DIR [BASE_DIR]
#   OPENENV_VENV: as serve.sh's; TORCH_VENV: torch + transformers (Qwen3); BASE_DIR default models/demo
set -euo pipefail
SRC=$1; OPENENV_VENV=$2; TORCH_VENV=$3; OUT=$4
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
BASE=${5:-$ROOT/models/demo}
WORK=$(mktemp -d)
"$HERE/serve.sh" "$SRC" "$OPENENV_VENV" 2>"$WORK/serve.log" &
SERVE=$!
trap 'kill "$SERVE" 2>/dev/null || true; wait "$SERVE" 2>/dev/null || true; rm -rf "$WORK"' EXIT
# serve.sh starts the four in order; finqa's port answering means all are up.
for _ in $(seq 240); do curl -sf http://127.0.0.1:18204/metadata >/dev/null 2>&1 && break; kill -0 "$SERVE" 2>/dev/null || { cat "$WORK/serve.log" >&2; exit 1; }; sleep 0.5; done
(cd "$ROOT" && npx tsx scripts/openenv-capture/calling-transcripts.ts "$BASE" "$WORK/sft.jsonl" 24)
"$TORCH_VENV/bin/python" "$HERE/make-calling-model.py" "$BASE" "$WORK/sft.jsonl" "$OUT"
