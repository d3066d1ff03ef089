"""Records what OpenEnv's own servers send, byte for byte, as test fixtures (tests/fixtures/openenv/<env>/).

Run by capture.sh against servers it started from OpenEnv's source. For each env: GET /metadata and
/schema (the reply bodies as sent), then scripted episodes over /ws: every frame sent and the exact text
of the frame that came back. Tests replay these bytes with a small fake server (CI has no Python).

usage: python capture.py NAME BASE_URL OUT_DIR EPISODES_JSON
  EPISODES_JSON: a list of episodes; an episode is {"reset": {...kwargs}, "steps": [action, ...]} or
  {"reset": ..., "frames": [raw frame, ...]} for frames that are not steps (mcp, state).
"""
import asyncio
import json
import os
import sys
import urllib.request

import websockets


def get(url):
    with urllib.request.urlopen(url) as res:
        return {"status": res.status, "content_type": res.headers.get("content-type"), "body": res.read().decode("utf-8")}


async def play(ws_url, episode):
    exchanges = []
    async with websockets.connect(ws_url, max_size=16 * 1024 * 1024) as ws:
        frames = [json.dumps({"type": "reset", "data": episode.get("reset", {})})]
        frames += [json.dumps({"type": "step", "data": a}) for a in episode.get("steps", [])]
        frames += [json.dumps(f) for f in episode.get("frames", [])]
        for frame in frames:
            await ws.send(frame)
            reply = await asyncio.wait_for(ws.recv(), timeout=30)
            exchanges.append({"send": frame, "expect": reply})
        await ws.send(json.dumps({"type": "close", "data": {}}))
    return exchanges


def main():
    name, base, out, episodes = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3], json.loads(sys.argv[4])
    os.makedirs(out, exist_ok=True)
    http = {route: get(base + route) for route in ("/metadata", "/schema")}
    ws_url = base.replace("http", "ws", 1) + "/ws"
    played = [{"reset": e.get("reset", {}), "exchanges": asyncio.run(play(ws_url, e))} for e in episodes]
    capture = {"env": name, "source": os.environ.get("OPENENV_SOURCE", "OpenEnv"), "http": http, "episodes": played}
    with open(os.path.join(out, "capture.json"), "w", encoding="utf-8") as f:
        json.dump(capture, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{name}: {len(played)} episodes, {sum(len(e['exchanges']) for e in played)} frames -> {out}/capture.json")


if __name__ == "__main__":
    main()
