// Scripted episodes against OpenEnv's own grid_world, maze, connect4 and finqa servers (serve.sh), played
// through the classes a run trains on — examples/{grid_world,maze,connect4}.mjs and finqa's zero-code MCP
// task — and tokenized exactly as webgrpo's SFT warm-up tokenizes transcripts (sftExamples), so the
// model make-calling-model.py fine-tunes on them emits the token ids a rollout samples.
//
// usage: npx tsx scripts/openenv-capture/calling-transcripts.ts MODEL_DIR OUT.jsonl [EPISODES_PER_ENV]
// Writes one line per episode: {"env", "ids", "trainMask", "messages"}. The servers: serve.sh's ports.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ToolCall } from '../../src/model/chat-template.ts';
import { loadCheckpointTokenizer } from '../../src/model/tokenizer.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { playEpisode } from '../../src/rl/tasks/play-episode.ts';
import { bindTask, resolveTask, sftExamples, type ResolvedTask } from '../../src/rl/tasks/resolve-task.ts';
import { envClassFromCli } from '../../src/rl/tasks/env-class-cli.ts';
import { parsePromptDataset } from '../../src/rl/tasks/mcp-task.ts';
import { mulberry32 } from '../../src/random.ts';

const ROOT = join(import.meta.dirname, '../..');
const URLS = { grid_world: 'http://127.0.0.1:18201', maze: 'http://127.0.0.1:18202', connect4: 'http://127.0.0.1:18203', finqa: 'http://127.0.0.1:18204' };

type Policy = (observation: string, turn: number) => ToolCall | null;
const call = (name: string, args: Record<string, unknown>): ToolCall => ({ type: 'function', function: { name, arguments: args } });

/** Toward the goal at (4, 4) — DOWN adds to x, RIGHT to y — with a random move one time in five, for variety. */
function gridWorldPolicy(rand: () => number): Policy {
  return (obs) => {
    const m = /Position \((\d+), (\d+)\)/.exec(obs);
    if (!m) return null;
    const [x, y] = [Number(m[1]), Number(m[2])];
    if (x === 4 && y === 4) return null;
    const toward = x < 4 && (y === 4 || rand() < 0.5) ? 'DOWN' : 'RIGHT';
    return call('move', { direction: rand() < 0.2 ? ['UP', 'DOWN', 'LEFT', 'RIGHT'][Math.floor(rand() * 4)]! : toward });
  };
}

/** Depth-first through the maze: an open move to a cell not yet visited (random order), else back the way it came. */
function mazePolicy(rand: () => number): Policy {
  const DELTA: Record<string, [number, number]> = { up: [0, -1], down: [0, 1], left: [-1, 0], right: [1, 0] };
  const visited = new Set<string>();
  const path: string[] = [];
  return (obs) => {
    const m = /Position \[(\d+), (\d+)\]\. Open moves: ([a-z, ]+)\./.exec(obs);
    if (!m || obs.includes('Game over')) return null;
    const [x, y] = [Number(m[1]), Number(m[2])];
    const here = `${x},${y}`;
    if (path[path.length - 1] !== here) {
      if (path[path.length - 2] === here) path.pop();
      else path.push(here);
    }
    visited.add(here);
    const open = m[3]!.split(', ').sort(() => rand() - 0.5);
    const fresh = open.find((d) => !visited.has(`${x + DELTA[d]![0]},${y + DELTA[d]![1]}`));
    const back = open.find((d) => `${x + DELTA[d]![0]},${y + DELTA[d]![1]}` === path[path.length - 2]);
    const direction = fresh ?? back ?? open[0];
    return direction ? call('move', { direction }) : null;
  };
}

/**
 * X wins a column race in the middle: 3, 4, 3, 4, 3, 4, 3. One line, not random columns: a tiny model
 * that drew among seven columns a turn garbled its third call, and never finished a game (no reward).
 */
const connect4Policy = (): Policy => (obs, turn) => (obs.includes('Game over') || turn >= 7 ? null : call('drop', { column: turn % 2 === 0 ? 3 : 4 }));

/** finqa-data's one question: look up the company's tables, then submit the answer. */
const finqaPolicy = (): Policy => (_obs, turn) =>
  turn === 0 ? call('get_descriptions', { company_name: 'acme' }) : turn === 1 ? call('submit_answer', { answer: '1200' }) : null;

const ENVS: { name: keyof typeof URLS; resolve: () => Promise<ResolvedTask>; policy: (rand: () => number) => Policy; maxTurns: number }[] = [
  { name: 'grid_world', resolve: () => envClassFromCli({ file: join(ROOT, 'examples/grid_world.mjs'), envUrl: URLS.grid_world }), policy: gridWorldPolicy, maxTurns: 8 },
  { name: 'maze', resolve: () => envClassFromCli({ file: join(ROOT, 'examples/maze.mjs'), envUrl: URLS.maze }), policy: mazePolicy, maxTurns: 8 },
  { name: 'connect4', resolve: () => envClassFromCli({ file: join(ROOT, 'examples/connect4.mjs'), envUrl: URLS.connect4 }), policy: connect4Policy, maxTurns: 7 },
  {
    name: 'finqa',
    resolve: async () => {
      const rows = parsePromptDataset(await readFile(join(import.meta.dirname, 'finqa-prompts.jsonl'), 'utf8'), 'finqa-prompts.jsonl');
      return resolveTask({ env: URLS.finqa, prompts: async () => rows });
    },
    policy: finqaPolicy,
    maxTurns: 2,
  },
];

async function main(): Promise<void> {
  const [modelDir, out, perEnv = '24'] = process.argv.slice(2);
  if (!modelDir || !out) throw new Error('usage: calling-transcripts.ts MODEL_DIR OUT.jsonl [EPISODES_PER_ENV]');
  const tokenizer = await loadCheckpointTokenizer(nodeFolderFiles(modelDir), modelDir);
  const rand = mulberry32(36);
  const lines: string[] = [];
  for (const env of ENVS) {
    const resolved = await env.resolve();
    const task = bindTask(resolved, { tokenizer });
    const chatTemplateKwargs = (resolved.task.config.chat_template_kwargs ?? null) as Record<string, unknown> | null;
    for (let k = 0; k < Number(perEnv); k++) {
      const row = task.dataset[k % task.dataset.length]!;
      const transcript = await playEpisode(task.envFactory(), row, env.policy(rand), env.maxTurns, URLS[env.name]);
      const [example] = sftExamples(task, [transcript], tokenizer, { chat_template_kwargs: chatTemplateKwargs });
      lines.push(JSON.stringify({ env: env.name, ...example, messages: transcript.messages }));
    }
    process.stderr.write(`${env.name}: ${perEnv} episodes\n`);
  }
  await writeFile(out, lines.join('\n') + '\n');
}

await main();
