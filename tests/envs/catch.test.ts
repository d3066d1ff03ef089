import { describe, expect, it } from 'vitest';
import { catchEnv } from '../../env-server/envs/catch.ts';
import type { EnvInstance, WireObservation } from '../../env-server/envs/types.ts';
import { wire } from './wire.ts';

const LEFT = 0;
const STAY = 1;
const RIGHT = 2;

/** The expected 10×5 info_state with ones at the ball and at the paddle (row 9). */
function board(ballRow: number, ballColumn: number, paddleColumn: number): number[] {
  const cells = new Array<number>(50).fill(0);
  cells[ballRow * 5 + ballColumn] = 1;
  cells[9 * 5 + paddleColumn] = 1;
  return cells;
}

function ballColumnOf(obs: WireObservation): number {
  const infoState = obs.observation.info_state as number[];
  const column = infoState.slice(0, 5).indexOf(1);
  expect(column).toBeGreaterThanOrEqual(0);
  return column;
}

function step(env: EnvInstance, actionId: number): WireObservation {
  return env.step({ action_id: actionId });
}

describe('catch env (OpenSpiel catch)', () => {
  it('reset: ball on row 0, paddle at column 2, reward null, fields in order', () => {
    const env = catchEnv.create();
    const obs = env.reset({ seed: 7 });
    const column = ballColumnOf(obs);
    expect(Object.keys(obs.observation)).toEqual(['info_state', 'legal_actions', 'game_phase', 'current_player_id', 'opponent_last_action']);
    expect(wire(obs)).toEqual({
      observation: {
        info_state: board(0, column, 2),
        legal_actions: [0, 1, 2],
        game_phase: 'initial',
        current_player_id: 0,
        opponent_last_action: null,
      },
      reward: null,
      done: false,
    });
    expect((obs.observation.info_state as number[]).filter((v) => v === 1)).toHaveLength(2);
  });

  it('seeded resets are reproducible and cover every column', () => {
    const columns = new Set<number>();
    for (let seed = 0; seed < 40; seed++) {
      const a = ballColumnOf(catchEnv.create().reset({ seed }));
      const b = ballColumnOf(catchEnv.create().reset({ seed }));
      expect(a).toBe(b);
      columns.add(a);
    }
    expect([...columns].sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it('a seeded stream continues into auto-resets, reproducibly', () => {
    const play = (): number[] => {
      const env = catchEnv.create();
      const firsts = [ballColumnOf(env.reset({ seed: 99 }))];
      for (let game = 0; game < 8; game++) {
        for (let i = 0; i < 9; i++) step(env, STAY);
        firsts.push(ballColumnOf(step(env, STAY)));
      }
      return firsts;
    };
    const columns = play();
    expect(play()).toEqual(columns);
    expect(new Set(columns).size).toBeGreaterThan(1);
  });

  it('unseeded resets draw every column', () => {
    const env = catchEnv.create();
    const columns = new Set<number>();
    for (let i = 0; i < 200; i++) columns.add(ballColumnOf(env.reset({})));
    expect(columns.size).toBe(5);
  });

  it('rejects a bad seed by name', () => {
    expect(() => catchEnv.create().reset({ seed: -1 })).toThrow('seed must be a non-negative integer or null, got -1');
    expect(() => catchEnv.create().reset({ seed: 'x' })).toThrow('seed must be a non-negative integer or null, got "x"');
  });

  it('hand-worked win: move under the ball, terminal after exactly 9 steps with +1', () => {
    const env = catchEnv.create();
    const column = ballColumnOf(env.reset({ seed: 1 }));
    let paddle = 2;
    for (let row = 1; row <= 9; row++) {
      const action = column < paddle ? LEFT : column > paddle ? RIGHT : STAY;
      paddle += action - 1;
      const obs = wire(step(env, action)) as WireObservation;
      if (row < 9) {
        expect(obs).toEqual({
          observation: { info_state: board(row, column, paddle), legal_actions: [0, 1, 2], game_phase: 'playing', current_player_id: 0, opponent_last_action: null },
          reward: 0,
          done: false,
        });
      } else {
        expect(paddle).toBe(column);
        expect(obs).toEqual({
          observation: { info_state: board(9, column, paddle), legal_actions: [], game_phase: 'terminal', current_player_id: -4, opponent_last_action: null },
          reward: 1,
          done: true,
        });
        // Ball and paddle share a cell: a single one.
        expect((obs.observation.info_state as number[]).filter((v) => v === 1)).toHaveLength(1);
      }
    }
    expect(env.state().step_count).toBe(9);
  });

  it('hand-worked loss: move away from the ball, −1 at step 9; the paddle clamps at the walls', () => {
    const env = catchEnv.create();
    const column = ballColumnOf(env.reset({ seed: 2 }));
    // Run to the wall farthest from the ball and push against it.
    const away = column <= 2 ? RIGHT : LEFT;
    const wall = away === RIGHT ? 4 : 0;
    const paddles = [3, 4, 4, 4, 4, 4, 4, 4, 4].map((p) => (wall === 4 ? p : 4 - p));
    for (let row = 1; row <= 9; row++) {
      const obs = step(env, away);
      expect(obs.observation.info_state).toEqual(board(row, column, paddles[row - 1]!));
      expect(obs.done).toBe(row === 9);
      expect(obs.reward).toBe(row === 9 ? -1 : 0);
    }
    expect((step(env, STAY).observation.game_phase)).toBe('initial');
  });

  it('auto-resets after terminal: action ignored, reward null, same episode, step_count keeps counting', () => {
    const env = catchEnv.create();
    env.reset({ seed: 11 });
    for (let i = 0; i < 9; i++) step(env, STAY);
    const { episode_id } = env.state();
    const next = step(env, LEFT);
    const column = ballColumnOf(next);
    expect(wire(next)).toEqual({
      observation: { info_state: board(0, column, 2), legal_actions: [0, 1, 2], game_phase: 'initial', current_player_id: 0, opponent_last_action: null },
      reward: null,
      done: false,
    });
    expect(env.state()).toEqual({
      episode_id,
      step_count: 10,
      game_name: 'catch',
      agent_player: 0,
      opponent_policy: 'random',
      game_params: {},
      num_players: 1,
    });
    expect(step(env, RIGHT).observation.info_state).toEqual(board(1, column, 3));
  });

  it('a fresh env (no reset) can step, as a stateless HTTP /step does', () => {
    const env = catchEnv.create();
    expect(env.state().step_count).toBe(0);
    const obs = step(env, STAY);
    expect(obs.observation.game_phase).toBe('playing');
    expect(obs.reward).toBe(0);
  });

  it('illegal actions raise the OpenSpiel error and change nothing', () => {
    const env = catchEnv.create();
    env.reset({ seed: 5 });
    expect(() => step(env, 3)).toThrow('Illegal action 3 for current player. Legal actions are: [0, 1, 2]');
    expect(() => step(env, -1)).toThrow('Illegal action -1 for current player. Legal actions are: [0, 1, 2]');
    expect(() => step(env, 1e21)).toThrow('Illegal action 1000000000000000000000 for current player.');
    expect(env.state().step_count).toBe(0);
  });

  it('validates OpenSpielAction like pydantic (lax ints, defaults, extras)', () => {
    expect(catchEnv.validateAction({ action_id: 2 })).toEqual({ ok: true, action: { metadata: {}, action_id: 2, game_name: 'catch', game_params: {} } });
    expect(catchEnv.validateAction({ action_id: ' 1 ', game_name: 'catch', game_params: { a: 1 } })).toEqual({
      ok: true,
      action: { metadata: {}, action_id: 1, game_name: 'catch', game_params: { a: 1 } },
    });
    expect(catchEnv.validateAction({ action_id: 2.0 })).toMatchObject({ ok: true, action: { action_id: 2 } });
    const bad = (data: unknown) => {
      const check = catchEnv.validateAction(data);
      if (check.ok) throw new Error('expected a validation failure');
      return check.errors.map((e) => [e.type, e.loc, e.msg]);
    };
    expect(bad({})).toEqual([['missing', ['action_id'], 'Field required']]);
    expect(bad({ action_id: 'left' })).toEqual([['int_parsing', ['action_id'], 'Input should be a valid integer, unable to parse string as an integer']]);
    expect(bad({ action_id: 1.5 })).toEqual([['int_from_float', ['action_id'], 'Input should be a valid integer, got a number with a fractional part']]);
    expect(bad({ action_id: null })).toEqual([['int_type', ['action_id'], 'Input should be a valid integer']]);
    expect(bad({ action_id: 1, game_name: 3, game_params: [], metadata: 'm', extra: true })).toEqual([
      ['dict_type', ['metadata'], 'Input should be a valid dictionary'],
      ['string_type', ['game_name'], 'Input should be a valid string'],
      ['dict_type', ['game_params'], 'Input should be a valid dictionary'],
      ['extra_forbidden', ['extra'], 'Extra inputs are not permitted'],
    ]);
    expect(catchEnv.validateAction([1])).toEqual({
      ok: false,
      errors: [
        {
          type: 'model_type',
          loc: [],
          msg: 'Input should be a valid dictionary or instance of OpenSpielAction',
          input: [1],
          ctx: { class_name: 'OpenSpielAction' },
          url: 'https://errors.pydantic.dev/2.13/v/model_type',
        },
      ],
    });
  });

  it('publishes OpenSpielEnvironment metadata and schemas', () => {
    expect(catchEnv.metadata.name).toBe('OpenSpielEnvironment');
    expect(catchEnv.metadata.description).toBe('OpenSpielEnvironment environment');
    const action = catchEnv.schema.action as Record<string, unknown>;
    expect(action).toMatchObject({ title: 'OpenSpielAction', type: 'object', additionalProperties: false, required: ['action_id'] });
    expect(Object.keys(action.properties as object)).toEqual(['metadata', 'action_id', 'game_name', 'game_params']);
    expect((action.properties as Record<string, unknown>).game_name).toMatchObject({ default: 'catch', type: 'string' });
  });
});
