// Game-aware known tasks: an OpenSpiel or TextArena server playing a game no task plays is not refused
// (today: "the trainer's OpenSpielEnvironment tasks play 'catch' only") but takes the generic path, with
// a one-line note saying so; its one tool comes from its own /schema.

import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveTask } from '../../src/rl/tasks/resolve-task.ts';
import { envToolSchemas } from '../../src/rl/rollout/env.ts';
import { openEnvEpisodes } from '../../src/rl/tasks/envs/episode-session.ts';

/** OpenEnv's OpenSpiel action (pydantic's schema of OpenSpielAction) and a metadata naming the game. */
const SCHEMA = {
  action: {
    additionalProperties: false,
    description: 'Action for OpenSpiel environments.',
    properties: {
      metadata: { additionalProperties: true, title: 'Metadata', type: 'object' },
      action_id: { description: 'Action ID to apply', title: 'Action Id', type: 'integer' },
      game_name: { default: 'tic_tac_toe', description: 'Name of the OpenSpiel game', title: 'Game Name', type: 'string' },
    },
    required: ['action_id'],
    title: 'OpenSpielAction',
    type: 'object',
  },
  observation: { properties: {}, title: 'OpenSpielObservation', type: 'object' },
  state: { properties: {}, title: 'State', type: 'object' },
};

let http: Server;
let url: string;
beforeAll(async () => {
  http = createServer((req, res) => {
    const body = req.url === '/schema' ? JSON.stringify(SCHEMA) : req.url === '/metadata' ? JSON.stringify({ name: 'OpenSpielEnvironment', description: 'OpenSpielEnvironment environment', game_name: 'tic_tac_toe' }) : null;
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' });
    res.end(body ?? '{"detail":"Not Found"}');
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  url = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
});
afterAll(async () => {
  http.closeAllConnections();
  await new Promise((resolve) => http.close(resolve));
});

describe('a game no task plays', () => {
  it('takes the generic path with a note naming the game', async () => {
    const r = await resolveTask({ env: url });
    expect(r.name).toBe('action-schema');
    expect(r.note).toBe(`${url} serves OpenSpielEnvironment playing 'tic_tac_toe'; the trainer's OpenSpielEnvironment tasks play 'catch' (the catch task) only — 'tic_tac_toe' has no task of its own: it trains on the generic path instead (its tools from the env itself)`);
    const [tool] = envToolSchemas(r.task.envFactory({}, openEnvEpisodes())());
    expect(tool!.function.name).toBe('open_spiel');
    expect(tool!.function.parameters).toEqual({
      type: 'object',
      properties: { action_id: { description: 'Action ID to apply', type: 'integer' }, game_name: { default: 'tic_tac_toe', description: 'Name of the OpenSpiel game', type: 'string' } },
      required: ['action_id'],
    });
  });
});
