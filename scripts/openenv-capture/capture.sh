#!/usr/bin/env bash
# Starts OpenEnv's grid_world, maze, connect4 and finqa servers from OpenEnv's source with uvicorn and
# records what each sends (scripts/openenv-capture/capture.py) under tests/fixtures/openenv/<env>/.
#
# usage: scripts/openenv-capture/capture.sh OPENENV_SRC VENV
#   OPENENV_SRC: a checkout of github.com/huggingface/OpenEnv (its src/ and envs/)
#   VENV: a Python venv with fastapi, uvicorn, pydantic, websockets, fastmcp, numpy, pandas
# finqa reads the small data set beside this script (finqa-data/: one question about one table).
set -euo pipefail
SRC=$(cd "$1" && pwd); VENV=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
OUT="$ROOT/tests/fixtures/openenv"
export PYTHONPATH="$SRC/src:$SRC/envs"
export OPENENV_SOURCE="OpenEnv $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo "${OPENENV_COMMIT:-source}"), $("$VENV/bin/python" -c 'import fastapi, pydantic; print(f"fastapi {fastapi.__version__}, pydantic {pydantic.__version__}")')"
export FINQA_DATA_PATH="$HERE/finqa-data"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

serve() { # module port
  "$VENV/bin/uvicorn" "$1" --host 127.0.0.1 --port "$2" --log-level warning &
  PIDS+=($!)
  for _ in $(seq 120); do curl -sf "http://127.0.0.1:$2/metadata" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "$1 did not start on port $2" >&2; return 1
}
capture() { "$VENV/bin/python" "$HERE/capture.py" "$1" "http://127.0.0.1:$2" "$OUT/$1" "$3"; }

serve grid_world_env.server.app:app 18201
capture grid_world 18201 '[
 {"steps": [{"action": "DOWN"}]}, {"steps": [{"action": "UP"}]}, {"steps": [{"action": "LEFT"}]}, {"steps": [{"action": "RIGHT"}]},
 {"steps": [{"action": "DOWN"}, {"action": "DOWN"}, {"action": "DOWN"}, {"action": "DOWN"}, {"action": "RIGHT"}, {"action": "RIGHT"}, {"action": "RIGHT"}, {"action": "RIGHT"}]},
 {"steps": [{"action": "NORTH"}]}, {"steps": [{}]}
]'
serve maze_env.server.app:app 18202
capture maze 18202 '[
 {"steps": [{"action": 0}]}, {"steps": [{"action": 1}]}, {"steps": [{"action": 2}]}, {"steps": [{"action": 3}]},
 {"steps": [{"action": "left"}]}
]'
serve connect4_env.server.app:app 18203
capture connect4 18203 '[
 {"steps": [{"column": 0}]}, {"steps": [{"column": 3}]}, {"steps": [{"column": 6}]},
 {"steps": [{"column": 0}, {"column": 1}, {"column": 0}, {"column": 1}, {"column": 0}, {"column": 1}, {"column": 0}]},
 {"steps": [{"column": 9}]}, {"steps": [{"column": "middle"}]}
]'
serve finqa_env.server.app:app 18204
capture finqa 18204 '[
 {"steps": [{"type": "list_tools"}]},
 {"frames": [{"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/list", "id": 1}}]},
 {"steps": [{"type": "call_tool", "tool_name": "get_descriptions", "arguments": {"company_name": "acme"}}, {"type": "call_tool", "tool_name": "submit_answer", "arguments": {"answer": "1200"}}]},
 {"steps": [{"type": "call_tool", "tool_name": "submit_answer", "arguments": {"answer": "7"}}]},
 {"steps": [{"type": "call_tool", "tool_name": "submit_answer", "arguments": {"answer": "1200"}}]}
]'
