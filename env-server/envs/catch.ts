// OpenSpiel `catch` as served by OpenEnv's openspiel_env (spec: openenv-protocol.md §5.2).
// A ball falls from row 0 of a 10×5 board, one row per step; the paddle starts in column 2 on the
// bottom row and moves LEFT/STAY/RIGHT. After 9 steps the ball reaches the bottom: +1 if caught,
// −1 if not. A step after the end starts a new episode (rl_environment auto-reset).

import type { EnvDefinition, EnvInstance, WireObservation } from './types.ts';
import { actionJsonSchema, actionModel, requireValidAction, validateModel } from './validation.ts';
import { BASE_STATE_SCHEMA, observationSchema } from './json-schema.ts';
import { defaultMetadata } from './metadata.ts';
import { cryptoRng, rngForSeed, type Rng } from './rng.ts';

export const CATCH_ROWS = 10;
export const CATCH_COLUMNS = 5;
export const CATCH_PADDLE_START = 2;
/** Actions: 0 = LEFT, 1 = STAY, 2 = RIGHT; the paddle moves by `action - 1`. */
export const CATCH_ACTIONS: readonly number[] = [0, 1, 2];
/** OpenSpiel's kTerminalPlayerId. */
const TERMINAL_PLAYER_ID = -4;

export const CATCH_ACTION = actionModel('OpenSpielAction', 'Action for OpenSpiel games.', [
  { name: 'action_id', type: { kind: 'int' }, description: 'Action ID to take' },
  // Accepted for wire compatibility; this server always plays catch.
  { name: 'game_name', type: { kind: 'string' }, description: 'Name of the OpenSpiel game', default: 'catch' },
  {
    name: 'game_params',
    type: { kind: 'dict' },
    description: 'Optional game parameters',
    defaultFactory: () => ({}),
  },
]);

const CATCH_OBSERVATION_SCHEMA = observationSchema('OpenSpielObservation', 'Observation from OpenSpiel environment.', [
  {
    name: 'info_state',
    schema: { type: 'array', items: { type: 'number' } },
    description: 'Information state tensor (list of floats) for the agent',
    required: true,
  },
  {
    name: 'legal_actions',
    schema: { type: 'array', items: { type: 'integer' } },
    description: 'List of legal action IDs the agent can take',
    required: true,
  },
  { name: 'game_phase', schema: { type: 'string' }, description: 'Current phase of the game', default: 'playing' },
  { name: 'current_player_id', schema: { type: 'integer' }, description: 'ID of the current player', default: 0 },
  {
    name: 'opponent_last_action',
    schema: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
    description: "Last action taken by opponent (if applicable)",
    default: null,
  },
]);

type Phase = 'initial' | 'playing' | 'terminal';

class CatchEnvironment implements EnvInstance {
  private episodeId: string = globalThis.crypto.randomUUID();
  private stepCount = 0;
  private rng: Rng = cryptoRng();
  private ballRow = 0;
  private ballColumn = 0;
  private paddleColumn = CATCH_PADDLE_START;

  constructor() {
    // A fresh env is already mid-game, so a stateless HTTP /step (fresh env, no reset) works.
    this.newGame();
  }

  reset(kwargs: Record<string, unknown>): WireObservation {
    this.rng = rngForSeed(kwargs.seed);
    this.episodeId = globalThis.crypto.randomUUID();
    this.stepCount = 0;
    this.newGame();
    return this.observe('initial', null);
  }

  step(data: Record<string, unknown>): WireObservation {
    const action = requireValidAction(CATCH_ACTION, data).action_id as number;
    if (!CATCH_ACTIONS.includes(action)) {
      // BigInt prints any integral double in full, as Python prints its int (1e21 → 1000…0).
      throw new Error(`Illegal action ${BigInt(action).toString()} for current player. Legal actions are: [0, 1, 2]`);
    }
    this.stepCount += 1;
    if (this.isTerminal()) {
      // rl_environment: stepping a finished game starts a new one and ignores the action;
      // the episode_id and step_count carry on.
      this.newGame();
      return this.observe('initial', null);
    }
    this.ballRow += 1;
    this.paddleColumn = Math.min(CATCH_COLUMNS - 1, Math.max(0, this.paddleColumn + action - 1));
    if (!this.isTerminal()) return this.observe('playing', 0.0);
    return this.observe('terminal', this.ballColumn === this.paddleColumn ? 1.0 : -1.0);
  }

  state(): Record<string, unknown> {
    return {
      episode_id: this.episodeId,
      step_count: this.stepCount,
      game_name: 'catch',
      agent_player: 0,
      opponent_policy: 'random',
      game_params: {},
      num_players: 1,
    };
  }

  close(): void {
    // Holds no resources.
  }

  private newGame(): void {
    this.ballRow = 0;
    this.ballColumn = this.rng.int(CATCH_COLUMNS);
    this.paddleColumn = CATCH_PADDLE_START;
  }

  private isTerminal(): boolean {
    return this.ballRow >= CATCH_ROWS - 1;
  }

  private observe(phase: Phase, reward: number | null): WireObservation {
    const infoState = new Array<number>(CATCH_ROWS * CATCH_COLUMNS).fill(0.0); // (rows, columns) row-major
    infoState[this.ballRow * CATCH_COLUMNS + this.ballColumn] = 1.0;
    infoState[(CATCH_ROWS - 1) * CATCH_COLUMNS + this.paddleColumn] = 1.0;
    const terminal = phase === 'terminal';
    return {
      observation: {
        info_state: infoState,
        legal_actions: terminal ? [] : [...CATCH_ACTIONS],
        game_phase: phase,
        current_player_id: terminal ? TERMINAL_PLAYER_ID : 0,
        opponent_last_action: null,
      },
      reward,
      done: terminal,
    };
  }
}

export const catchEnv: EnvDefinition = {
  name: 'catch',
  metadata: defaultMetadata('OpenSpielEnvironment'),
  schema: { action: actionJsonSchema(CATCH_ACTION), observation: CATCH_OBSERVATION_SCHEMA, state: BASE_STATE_SCHEMA },
  validateAction: (data) => validateModel(CATCH_ACTION, data),
  create: () => new CatchEnvironment(),
};
