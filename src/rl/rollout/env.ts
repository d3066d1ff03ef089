// The environment contract (grpo-semantics.md §1), TRL's `environment_factory` in TypeScript:
// a no-argument factory; `reset(row)` → observation text appended to the last prompt message (or null);
// the env's tools, offered to the model sorted by name; an optional `getReward()`. Everything may be async.

import type { ChatMessage } from '../../model/chat-template.ts';
import { toolSchema, type ToolDeclaration, type ToolSchema } from './schema.ts';

/** A dataset row: the prompt messages plus any other columns (e.g. `env`), all passed to `reset`. */
export type DatasetRow = { prompt: ChatMessage[] } & Record<string, unknown>;

export interface Tool {
  declaration: ToolDeclaration;
  /**
   * The schema the model sees, when the env supplies it (an MCP tool's input schema); otherwise it is
   * built from `declaration` as transformers does. With it, arguments are checked by the env, not here.
   */
  schema?: ToolSchema;
  /**
   * 'sync' tools run one after another in call order (each awaited); 'async' tools (Python coroutine
   * functions) of a turn run concurrently and their results come after the sync ones. Default 'sync'.
   */
  kind?: 'sync' | 'async';
  /** Called with the model's arguments, already checked against the declared parameters. */
  call(args: Record<string, unknown>): unknown;
}

export interface ToolEnv {
  /** Start an episode for this row; a string is appended to the last prompt message with no separator. */
  reset(row: DatasetRow): string | null | Promise<string | null>;
  readonly tools: readonly Tool[];
  /** A reward source named after the env's class (`rewards/<ClassName>/mean`). */
  getReward?(): number | null | Promise<number | null>;
  /** Release the episode's resources (e.g. its connection). Fields reward functions read stay valid. */
  close?(): void | Promise<void>;
}

export type EnvFactory = () => ToolEnv;

/**
 * The environment itself failed (connection refused, dropped, timed out), as opposed to a tool rejecting
 * the model's call. The rollout cannot be scored and is recorded with this reason; training goes on.
 */
export class EnvFailure extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EnvFailure';
  }
}

const RESERVED = new Set(['reset', 'get_reward', 'getReward', 'close', 'tools']);

/** The env's tools sorted by name (Python's `inspect.getmembers` order), validated once. */
export function envTools(env: ToolEnv): Tool[] {
  const tools = [...env.tools].sort((a, b) => (a.declaration.name < b.declaration.name ? -1 : a.declaration.name > b.declaration.name ? 1 : 0));
  for (let i = 0; i < tools.length; i++) {
    const name = tools[i].declaration.name;
    if (RESERVED.has(name)) throw new Error(`tool name '${name}' is reserved by the env contract`);
    if (i > 0 && tools[i - 1].declaration.name === name) throw new Error(`two tools are named '${name}'`);
  }
  return tools;
}

/** The schemas the chat template renders, in tool order. */
export function envToolSchemas(env: ToolEnv): ToolSchema[] {
  return envTools(env).map(toolSchemaOf);
}

/** The schema a tool is rendered with. */
export function toolSchemaOf(tool: Tool): ToolSchema {
  return tool.schema ?? toolSchema(tool.declaration);
}

/**
 * TRL's environment pool: rollout slot i always gets the same instance across generation batches;
 * instances are created only when the pool runs out.
 */
export class EnvPool {
  private readonly instances: ToolEnv[] = [];
  constructor(readonly factory: EnvFactory) {}

  take(count: number): ToolEnv[] {
    while (this.instances.length < count) this.instances.push(this.factory());
    return this.instances.slice(0, count);
  }
}
