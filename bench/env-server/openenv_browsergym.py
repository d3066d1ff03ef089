"""OpenEnv's own BrowserGymEnv client against webgrpo's /envs/browsergym (issue 19).

Drives the server with the unmodified client of meta-pytorch/OpenEnv (envs/browsergym_env), the
same calls TRL's browsergym example makes, and checks three things:

1. frames: for each episode recorded from OpenEnv's real BrowserGym server on MiniWoB++
   (tests/envs/browsergym-vectors/real-frames.json), reset(task_name, seed) gives the recorded goal
   and tree byte for byte, and the recorded actions win (reward 1.0, done).
2. tasks: every task page of a MiniWoB++ folder resets by name (goal non-empty, a tree, no error).
3. latencies of both, per call.

Neither OpenEnv nor MiniWoB++ is part of this repository. Setup (offline wheelhouse):

  python3 -m venv /opt/openenv-venv
  /opt/openenv-venv/bin/pip install --no-index --find-links /opt/pypi/files \
      --find-links /opt/pypi-more/files fastapi pydantic websockets requests httpx uvicorn pyyaml fastmcp
  git --git-dir=<OpenEnv git dir> archive HEAD src envs/browsergym_env pyproject.toml README.md LICENSE \
      | tar -x -C /tmp/openenv && /opt/openenv-venv/bin/pip install --no-deps /tmp/openenv
  git --git-dir=<miniwob-plusplus git dir> archive HEAD miniwob/html | tar -x -C /tmp/miniwob
  # MiniWoB++ served the way OpenEnv's image serves it, so page URLs match the recorded frames:
  (cd /tmp/miniwob/miniwob/html && python3 -m http.server 8888 --bind 127.0.0.1) &
  MINIWOB_URL=http://127.0.0.1:8888/miniwob/ npx webgrpo env-server --port 8765 &

Run:

  /opt/openenv-venv/bin/python bench/env-server/openenv_browsergym.py --openenv /tmp/openenv \
      --url http://127.0.0.1:8765/envs/browsergym --miniwob /tmp/miniwob/miniwob/html/miniwob

Exit status 0 iff every frame matches and wins and every task resets.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

DEFAULT_FRAMES = Path(__file__).resolve().parents[2] / "tests/envs/browsergym-vectors/real-frames.json"
# Where the recorded frames' pages were served (OpenEnv's image: MINIWOB_URL).
RECORDED_BASE = "http://127.0.0.1:8888/miniwob/"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--openenv", required=True, help="an OpenEnv source tree (holds envs/browsergym_env)")
    p.add_argument("--url", required=True, help="the env's base URL, e.g. http://127.0.0.1:8765/envs/browsergym")
    p.add_argument("--frames", default=str(DEFAULT_FRAMES), help="episodes recorded from the real server")
    p.add_argument("--miniwob", help="a MiniWoB++ html/miniwob folder: reset each of its tasks by name")
    p.add_argument("--seed", type=int, default=0, help="seed of the all-tasks resets (default 0)")
    p.add_argument("--json", help="also write the results here")
    return p.parse_args()


def ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 1)


def first_difference(a: str, b: str) -> str:
    """Where two strings part, for a report line."""
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at char {i}: got {a[max(0, i - 20):i + 40]!r}, want {b[max(0, i - 20):i + 40]!r}"


def check_frames(env, action_cls, frames: list[dict]) -> list[dict]:
    rows = []
    for ep in frames:
        t0 = time.perf_counter()
        r = env.reset(task_name=ep["task"], seed=ep["seed"])
        reset_ms = ms(t0)
        obs = r.observation
        # The server's page base (its MINIWOB_URL); only when it differs from the recording's does
        # the tree compare after swapping it (the root line's url= and nothing else mentions it).
        base = obs.url[: len(obs.url) - len(ep["task"] + ".html")]
        want_tree = ep["axtree_txt"]
        row = {
            "task": ep["task"],
            "seed": ep["seed"],
            "goal_equal": obs.goal == ep["goal"],
            "tree_equal": obs.axtree_txt == want_tree,
            "text_equal": obs.text == want_tree,
            "tree_equal_after_base_swap": obs.axtree_txt == want_tree.replace(RECORDED_BASE, base),
            "base": base,
            "reset_ms": reset_ms,
            "tree_bytes": len(obs.axtree_txt.encode()),
        }
        if not row["goal_equal"]:
            row["goal_diff"] = first_difference(obs.goal, ep["goal"])
        if not row["tree_equal"]:
            row["tree_diff"] = first_difference(obs.axtree_txt, want_tree)
        step_ms = []
        errors = []
        for action in ep["actions"]:
            t0 = time.perf_counter()
            r = env.step(action_cls(action_str=action))
            step_ms.append(ms(t0))
            if r.observation.error or r.observation.last_action_error:
                errors.append(f"{action}: {r.observation.error}")
        row.update(reward=r.reward, done=r.done, step_ms=step_ms, action_errors=errors)
        row["ok"] = row["goal_equal"] and row["tree_equal"] and row["text_equal"] and r.reward == 1.0 and r.done and not errors
        rows.append(row)
    return rows


def check_all_tasks(env, names: list[str], seed: int) -> list[dict]:
    rows = []
    for name in names:
        t0 = time.perf_counter()
        try:
            r = env.reset(task_name=name, seed=seed)
        except Exception as err:  # the client raises the server's error frame; record it, go on
            rows.append({"task": name, "ok": False, "error": f"{type(err).__name__}: {err}", "reset_ms": ms(t0)})
            continue
        obs = r.observation
        ok = bool(obs.goal) and obs.axtree_txt.startswith("RootWebArea ") and not obs.error and r.done is False
        rows.append({"task": name, "ok": ok, "goal": obs.goal, "reset_ms": ms(t0), "tree_lines": obs.axtree_txt.count("\n") + 1, "error": obs.error})
    return rows


def main() -> int:
    args = parse_args()
    sys.path.insert(0, args.openenv)
    from envs.browsergym_env import BrowserGymAction, BrowserGymEnv  # OpenEnv's client, unmodified

    frames = json.loads(Path(args.frames).read_text())["episodes"]
    names = sorted(p.stem for p in Path(args.miniwob).glob("*.html")) if args.miniwob else []

    with BrowserGymEnv(base_url=args.url).sync() as env:
        frame_rows = check_frames(env, BrowserGymAction, frames)
        task_rows = check_all_tasks(env, names, args.seed)

    print(f"OpenEnv BrowserGymEnv client -> {args.url}")
    print(f"recorded frames: {json.loads(Path(args.frames).read_text())['source']}")
    print()
    print(f"{'task':<18}{'seed':>5}  {'goal':<6}{'axtree':<8}{'text':<6}{'reward':>7}  {'done':<6}{'reset ms':>9}  step ms")
    for r in frame_rows:
        yn = lambda b: "equal" if b else "DIFF"
        print(f"{r['task']:<18}{r['seed']:>5}  {yn(r['goal_equal']):<6}{yn(r['tree_equal']):<8}{yn(r['text_equal']):<6}{r['reward']:>7}  {str(r['done']):<6}{r['reset_ms']:>9}  {r['step_ms']}")
        for key in ("goal_diff", "tree_diff"):
            if key in r:
                print(f"    {key}: {r[key]}")
        if not r["tree_equal"] and r["tree_equal_after_base_swap"]:
            print(f"    tree equal once the recorded base {RECORDED_BASE} is read as this server's {r['base']}")
        for e in r["action_errors"]:
            print(f"    action error: {e}")
    if task_rows:
        bad = [r for r in task_rows if not r["ok"]]
        times = [r["reset_ms"] for r in task_rows]
        print()
        print(f"all tasks of {args.miniwob}: {len(task_rows) - len(bad)}/{len(task_rows)} reset by name (seed {args.seed}); "
              f"reset ms p50 {statistics.median(times):.0f}, max {max(times):.0f}")
        for r in bad:
            print(f"    {r['task']}: {r.get('error') or 'goal ' + repr(r.get('goal'))}")

    if args.json:
        Path(args.json).write_text(json.dumps({"url": args.url, "frames": frame_rows, "tasks": task_rows}, indent=1))
    ok = all(r["ok"] for r in frame_rows) and all(r["ok"] for r in task_rows)
    print()
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
