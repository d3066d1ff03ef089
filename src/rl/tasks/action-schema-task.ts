// Zero code for any OpenEnv server of the older action protocol that no task knows (grid_world, maze,
// connect4, …; specs/environment-classes.md §4): the server describes itself, so its `/schema` action
// becomes ONE tool named after the env (the action's fields as parameters, with their types, enums and
// descriptions), each call is one `step`, the observation's fields are the tool's result text, and the
// episode's reward is the sum of its step rewards (0 when the env paid none, as TRL's examples start
// `self.reward = 0.0`). With no prompt given, the env's /metadata description is the prompt and the
// reset observation follows it.

import { replyText } from '../../openenv/http-reply.ts';
import type { RewardFunction } from '../grpo/rewards.ts';
import type { DatasetRow, Tool, ToolEnv } from '../rollout/env.ts';
import type { JsonSchema, ToolSchema } from '../rollout/schema.ts';
import { EpisodeSlot, openEnvEpisodes, type OpenEpisode } from './envs/episode-session.ts';
import type { ChatTemplateTask } from './task.ts';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What the env says about itself: GET /metadata and the action and observation schemas of GET /schema. */
export interface EnvDescription {
  /** The Environment class (`GridWorldEnvironment`). */
  className: string;
  description: string;
  action: JsonSchema;
}

/** OpenEnv's base Action and Observation fields that are no part of what the model chooses or reads. */
const BASE_ACTION_FIELDS = new Set(['metadata']);
const BASE_OBSERVATION_FIELDS = new Set(['metadata', 'reward', 'done']);

/** `GridWorldEnvironment` → `grid_world`, `Connect4Environment` → `connect4`: the tool's name. */
export function toolNameOf(className: string): string {
  const base = className.replace(/(Environment|Env)$/, '') || className;
  const snake = base
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toLowerCase();
  // A tool name must not start with a digit nor be empty (chat templates render it as an identifier).
  return /^[a-z_]/.test(snake) ? snake : `env_${snake}`;
}

/**
 * A pydantic JSON Schema made self-contained for the model: `$ref`s into `$defs` inlined (grid_world's
 * `MoveAction` enum), keeping the referring field's own description; pydantic's `title`s dropped (the
 * field name says it, and transformers' schemas have none).
 */
export function inlineSchema(schema: unknown, defs: Record<string, unknown>, depth = 0): unknown {
  if (Array.isArray(schema)) return schema.map((s) => inlineSchema(s, defs, depth));
  if (!isObject(schema)) return schema;
  // A self-referring model (a tree) would recurse forever: past a sane depth the reference stays opaque.
  if (depth > 32) return { type: 'object' };
  let out: Record<string, unknown> = { ...schema };
  if (typeof out.$ref === 'string') {
    const name = out.$ref.replace(/^#\/(\$defs|definitions)\//, '');
    const target = defs[name];
    const { $ref: _ref, ...siblings } = out;
    out = isObject(target) ? { ...target, ...siblings } : siblings;
    depth++;
  }
  delete out.title;
  delete out.$defs;
  delete out.definitions;
  for (const [k, v] of Object.entries(out)) {
    if (k === 'properties' && isObject(v)) out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, inlineSchema(s, defs, depth)]));
    else if (k === 'items' || k === 'anyOf' || k === 'oneOf' || k === 'allOf' || k === 'additionalProperties' || k === 'prefixItems') out[k] = inlineSchema(v, defs, depth);
  }
  return out;
}

/** The one tool of an action-protocol env: its action's fields as the function's parameters. */
export function actionToolSchema(env: EnvDescription): ToolSchema {
  const defs = { ...(isObject(env.action.definitions) ? env.action.definitions : {}), ...(isObject(env.action.$defs) ? env.action.$defs : {}) };
  const properties = isObject(env.action.properties) ? env.action.properties : {};
  const params: Record<string, JsonSchema> = {};
  for (const [name, s] of Object.entries(properties)) if (!BASE_ACTION_FIELDS.has(name)) params[name] = inlineSchema(s, defs) as JsonSchema;
  const required = (Array.isArray(env.action.required) ? env.action.required : []).filter((n): n is string => typeof n === 'string' && n in params);
  const what = typeof env.action.description === 'string' && env.action.description.trim() !== '' ? `\n\n${env.action.description.trim()}` : '';
  return {
    type: 'function',
    function: {
      name: toolNameOf(env.className),
      description: `Take one action in the ${env.className} environment; returns the observation after it.${what}`,
      parameters: { type: 'object', properties: params, required },
    },
  };
}

/** The observation's own fields as text, one `name: value` line each (strings raw, the rest as JSON). */
export function observationText(observation: unknown): string {
  if (!isObject(observation)) return JSON.stringify(observation);
  const lines = Object.entries(observation)
    .filter(([k]) => !BASE_OBSERVATION_FIELDS.has(k))
    .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return lines.length > 0 ? lines.join('\n') : '(no observation fields)';
}

/** One episode of the env: its one tool steps it; `reward` is the episode's return so far. */
export class ActionSchemaEnv implements ToolEnv {
  /** The sum of the env's step rewards this episode; 0 when it paid none. */
  reward = 0;
  done = false;
  readonly tools: Tool[];
  private readonly episode: EpisodeSlot;

  constructor(baseUrl: string, open: OpenEpisode, schema: ToolSchema) {
    this.episode = new EpisodeSlot(baseUrl, open);
    const required = new Set(schema.function.parameters.required ?? []);
    this.tools = [
      {
        declaration: {
          name: schema.function.name,
          description: schema.function.description,
          parameters: Object.entries(schema.function.parameters.properties).map(([name, p]) => ({
            name,
            type: 'any' as const,
            description: typeof p.description === 'string' ? p.description : '',
            optional: !required.has(name),
          })),
        },
        // The server checks the action (pydantic); its VALIDATION_ERROR is the result the model reads.
        schema,
        call: (args) => this.act(args),
      },
    ];
  }

  /** Resets with the row's columns other than `prompt` (OpenEnv's reset takes `seed` and the env's own kwargs). */
  async reset(row: DatasetRow): Promise<string> {
    this.reward = 0;
    const { prompt: _prompt, ...kwargs } = row;
    const first = await this.episode.reset(kwargs);
    this.done = first.done;
    return `\n\n${observationText(first.observation)}`;
  }

  private async act(args: Record<string, unknown>): Promise<string> {
    // As TRL's examples: a finished game takes no more moves (OpenEnv's servers would go on stepping).
    if (this.done) throw new Error('The episode is over: no more actions.');
    const step = await this.episode.step(args);
    const reward = typeof step.reward === 'boolean' ? Number(step.reward) : step.reward;
    if (typeof reward === 'number' && Number.isFinite(reward)) this.reward += reward;
    this.done = step.done;
    return step.done ? `${observationText(step.observation)}\nThe episode is over.` : observationText(step.observation);
  }

  close(): Promise<void> {
    return this.episode.close();
  }
}

/** GET /metadata and /schema of the env at `url`; a clear error naming the route that failed. */
export async function describeEnv(url: string, fetchImpl: typeof fetch = fetch): Promise<EnvDescription> {
  const read = async (route: string): Promise<Record<string, unknown>> => {
    const where = `GET ${url}${route}`;
    const res = await fetchImpl(`${url}${route}`);
    const text = await replyText(res, where);
    if (!res.ok) throw new Error(`${where}: HTTP ${res.status}${text.trim() ? `: ${text.trim().slice(0, 200)}` : ''}`);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new Error(`${where}: not JSON: ${text.slice(0, 200)}`);
    }
    if (!isObject(value)) throw new Error(`${where}: not a JSON object: ${text.slice(0, 200)}`);
    return value;
  };
  const [meta, schema] = [await read('/metadata'), await read('/schema')];
  if (!isObject(schema.action) || !isObject(schema.action.properties)) {
    throw new Error(`GET ${url}/schema has no action schema with properties: the trainer cannot tell what actions the env takes`);
  }
  const className = typeof meta.name === 'string' && meta.name !== '' ? meta.name : 'Environment';
  const description = typeof meta.description === 'string' && meta.description.trim() !== '' ? meta.description.trim() : `The ${className} environment.`;
  return { className, description, action: schema.action };
}

/**
 * The task of the action-protocol env at `url`: its one tool, the env's reward, and the user's prompts,
 * or with none the env's own description (the reset observation follows either).
 */
export async function actionSchemaTask(url: string, prompts: DatasetRow[], open: OpenEpisode = openEnvEpisodes(), fetchImpl: typeof fetch = fetch): Promise<ChatTemplateTask> {
  const env = await describeEnv(url, fetchImpl);
  const schema = actionToolSchema(env);
  const rows = prompts.length > 0 ? prompts : [{ prompt: [{ role: 'user' as const, content: env.description }] }];
  const reward: RewardFunction = ({ environments }) =>
    environments.map((e) => {
      if (!(e instanceof ActionSchemaEnv)) throw new Error('reward_from_env: not an action-schema env');
      return e.reward;
    });
  Object.defineProperty(reward, 'name', { value: 'reward_from_env' });
  return {
    name: 'action-schema',
    // The rows cycled to `size` (default: the user's prompts once each, or the env's prompt 1000 times as TRL's catch).
    dataset: (size = prompts.length > 0 ? prompts.length : 1000) => Array.from({ length: size }, (_, i) => structuredClone(rows[i % rows.length]!)),
    envFactory: (_urls, episodes) => () => new ActionSchemaEnv(url, episodes ?? open, schema),
    rewardFuncs: [reward],
    config: { chat_template_kwargs: { enable_thinking: false }, log_completions: true },
  };
}
