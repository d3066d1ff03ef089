// The legacy OpenEnv echo environment (EchoAction/EchoObservation), as OpenEnv served it before MCP:
// echoes the message back, rewards its length in code points × 0.1, never ends. Spec:
// openenv-protocol.md §5.1. Not mounted by default (`/envs/echo` is the MCP echo, which also takes
// this env's `{"message"}` steps); `createEnvServer({ envs: { echo: legacyEchoEnv } })` serves it.

import type { EnvDefinition, EnvInstance, WireObservation } from './types.ts';
import { actionJsonSchema, actionModel, requireValidAction, validateModel } from './validation.ts';
import { BASE_STATE_SCHEMA, observationSchema } from './json-schema.ts';
import { defaultMetadata } from './metadata.ts';

export const ECHO_ACTION = actionModel('EchoAction', 'Action for the Echo environment - just a message to echo.', [
  {
    name: 'message',
    type: { kind: 'string', minLength: 1 },
    description: 'Message to echo back',
  },
]);

const ECHO_OBSERVATION_SCHEMA = observationSchema('EchoObservation', 'Observation from the Echo environment - the echoed message.', [
  { name: 'echoed_message', schema: { type: 'string' }, description: 'The echoed message from the environment', required: true },
  {
    name: 'message_length',
    schema: { type: 'integer', minimum: 0 },
    description: 'Length of the echoed message',
    default: 0,
  },
]);

class LegacyEchoEnvironment implements EnvInstance {
  private episodeId: string = globalThis.crypto.randomUUID();
  private stepCount = 0;

  // Upstream reset() takes no arguments, so seed/episode_id are dropped.
  reset(_kwargs: Record<string, unknown>): WireObservation {
    this.episodeId = globalThis.crypto.randomUUID();
    this.stepCount = 0;
    return { observation: { echoed_message: 'Echo environment ready!', message_length: 0 }, reward: 0.0, done: false };
  }

  step(data: Record<string, unknown>): WireObservation {
    const message = requireValidAction(ECHO_ACTION, data).message as string;
    this.stepCount += 1;
    const length = [...message].length; // Python len(): code points
    // L * 0.1 in IEEE double, exactly as Python computes it (3 → 0.30000000000000004); never L / 10.
    return { observation: { echoed_message: message, message_length: length }, reward: length * 0.1, done: false };
  }

  state(): Record<string, unknown> {
    return { episode_id: this.episodeId, step_count: this.stepCount };
  }

  close(): void {
    // Holds no resources.
  }
}

export const legacyEchoEnv: EnvDefinition = {
  name: 'echo',
  metadata: defaultMetadata('EchoEnvironment'),
  schema: { action: actionJsonSchema(ECHO_ACTION), observation: ECHO_OBSERVATION_SCHEMA, state: BASE_STATE_SCHEMA },
  validateAction: (data) => validateModel(ECHO_ACTION, data),
  create: () => new LegacyEchoEnvironment(),
};
