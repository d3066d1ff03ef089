#!/usr/bin/env bash
# Starts OpenEnv's grid_world, maze, connect4 and finqa servers from OpenEnv's source with uvicorn, on
# 127.0.0.1 ports 18201-18204, and keeps them up until it is stopped (Ctrl-C or SIGTERM stops all four).
# make-calling-model.sh plays them for its transcripts; `webgrpo train --env-url` then trains against them.
#
# usage: scripts/openenv-capture/serve.sh OPENENV_SRC VENV
#   OPENENV_SRC, VENV: as capture.sh's (finqa reads finqa-data/ beside this script)
set -euo pipefail
SRC=$(cd "$1" && pwd); VENV=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$SRC/src:$SRC/envs"
export FINQA_DATA_PATH="$HERE/finqa-data"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

serve() { # module port
  "$VENV/bin/uvicorn" "$1" --host 127.0.0.1 --port "$2" --log-level warning &
  PIDS+=($!)
  for _ in $(seq 120); do curl -sf "http://127.0.0.1:$2/metadata" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "$1 did not start on port $2" >&2; return 1
}

serve grid_world_env.server.app:app 18201
serve maze_env.server.app:app 18202
serve connect4_env.server.app:app 18203
serve finqa_env.server.app:app 18204
echo "grid_world http://127.0.0.1:18201, maze http://127.0.0.1:18202, connect4 http://127.0.0.1:18203, finqa http://127.0.0.1:18204" >&2
wait
