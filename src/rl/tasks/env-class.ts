// Environment classes: TRL's `environment_factory` in JavaScript (specs/environment-classes.md). A module's
// default export is a class (or TRL's dict form, `{ name: Class }`, the row's `environment` column
// picking one) constructed with no arguments, with `reset(row)` and public methods as tools (schemas from
// their JSDoc, or a static `toolSchemas`), optional `getReward()`, and optional named exports
// `rewardFuncs` (TRL's reward functions), `dataset` (rows) and `config` (GRPOConfig keys). It becomes the
// same task object the built-in tasks are (task.ts), so training, rendering and evaluation take one path.

import type { DatasetRow, Tool, ToolEnv } from '../rollout/env.ts';
import type { ToolDeclaration, ToolSchema } from '../rollout/schema.ts';
import type { RewardArgs, RewardFunction } from '../grpo/rewards.ts';
import { setDefaultEnvUrl, setEnvUrls, withResetDefaults } from '../../openenv/env-client.ts';
import { pyStr } from '../../pyrepr.ts';
import { declarationFromJsdoc, documentedMethods, type DocumentedMethod } from './env-class-jsdoc.ts';
import { importModuleText, type ModuleTextOptions } from './env-class-module.ts';
import type { ChatTemplateTask, EnvUrlName } from './task.ts';
import * as openenvNamespace from '../../openenv/index.ts';
import { imageFromRgbRows } from '../rollout/images.ts';
import { thumbnail } from '../rollout/image-resize.ts';

/**
 * `webgrpo/images`: what a class that returns screenshots needs (examples/browsergym.mjs), the trainer's own
 * image code — OpenEnv's screenshot rows as an image, and PIL's thumbnail(LANCZOS) — as TRL's classes use PIL.
 */
const IMAGES: Readonly<Record<string, unknown>> = { imageFromRgbRows, thumbnail };

type EnvClass = new () => Record<string, unknown>;

/** Where a class env's episode seeds come from (play-episode.ts SeededEpisodes). */
interface EpisodeSeeds {
  nextSeed(): number;
}

/** What an environment module exports, checked. */
export interface EnvClassModule {
  /** Where it came from (a file name), for messages. */
  source: string;
  /** Its text: tool schemas are read from its JSDoc. */
  text: string;
  /** `null` → the one class of a single-environment module; names → TRL's dict form. */
  classes: ReadonlyMap<string | null, EnvClass>;
  rewardFuncs: RewardFunction[];
  /** The module's own `dataset` rows, or null (then `--dataset`, or the environment owns the data). */
  dataset: DatasetRow[] | null;
  config: Record<string, unknown>;
}

/**
 * Longest text the trainer takes from a class (a reset observation or a tool result), in characters. A
 * class that returns megabytes is cut here, before tokenizing (BPE on one 64 K-letter word already takes
 * seconds); the token budget bounds what is left. Far above what fits a completion budget.
 */
export const MAX_CLASS_TEXT = 64 * 1024;

const NOT_TOOLS = new Set(['constructor', 'reset', 'getReward', 'get_reward', 'close']);

function isClass(value: unknown): value is EnvClass {
  return typeof value === 'function' && /^class\b/.test(Function.prototype.toString.call(value));
}

/** Checks a module namespace against the contract (file comment); clear errors name what is wrong. */
export function envClassModule(ns: Record<string, unknown>, text: string, source: string): EnvClassModule {
  const def = ns.default;
  const classes = new Map<string | null, EnvClass>();
  if (isClass(def)) classes.set(null, def);
  else if (def && typeof def === 'object' && !Array.isArray(def)) {
    for (const [name, value] of Object.entries(def)) {
      if (!isClass(value)) throw new Error(`${source}: the default export's '${name}' is not a class (TRL's dict form maps environment names to classes)`);
      classes.set(name, value);
    }
    if (classes.size === 0) throw new Error(`${source}: the default export is an empty object; export a class, or { name: Class, … }`);
  } else {
    throw new Error(`${source}: the default export must be an environment class (export default class MyEnv { reset(row) {…} … }) or { name: Class, … }; got ${def === undefined ? 'nothing' : typeof def}`);
  }
  for (const [name, Cls] of classes) {
    if (typeof Cls.prototype.reset !== 'function') throw new Error(`${source}: ${label(Cls, name)} has no reset(row) method (every environment class needs one)`);
  }
  const rewardFuncs = ns.rewardFuncs ?? [];
  if (!Array.isArray(rewardFuncs) || !rewardFuncs.every((f) => typeof f === 'function')) throw new Error(`${source}: 'rewardFuncs' must be an array of functions`);
  rewardFuncs.forEach((f: RewardFunction, i) => {
    if (!f.name) throw new Error(`${source}: rewardFuncs[${i}] has no name (it becomes the metric rewards/<name>/mean): declare it as a named function`);
  });
  let dataset: DatasetRow[] | null = null;
  if (ns.dataset !== undefined) {
    if (!Array.isArray(ns.dataset) || !ns.dataset.every((r) => r && typeof r === 'object' && !Array.isArray(r))) throw new Error(`${source}: 'dataset' must be an array of row objects`);
    dataset = (ns.dataset as Record<string, unknown>[]).map((row, i) => datasetRow(row, `${source}: dataset[${i}]`));
  }
  const config = ns.config ?? {};
  if (typeof config !== 'object' || config === null || Array.isArray(config)) throw new Error(`${source}: 'config' must be an object of GRPOConfig keys`);
  return { source, text, classes, rewardFuncs: rewardFuncs as RewardFunction[], dataset, config: { ...(config as Record<string, unknown>) } };
}

function label(Cls: EnvClass, name: string | null): string {
  return name === null ? `class ${Cls.name || '(anonymous)'}` : `environment '${name}' (class ${Cls.name || '(anonymous)'})`;
}

/**
 * A dataset row as the trainer takes it: `prompt` a string (one user message) or messages; a row without
 * one gets an empty user message (TRL, with an environment_factory). Every other column is kept for reset.
 */
export function datasetRow(row: Record<string, unknown>, where: string): DatasetRow {
  const prompt = row.prompt;
  if (prompt === undefined) return { ...row, prompt: [{ role: 'user', content: '' }] };
  if (typeof prompt === 'string') return { ...row, prompt: [{ role: 'user', content: prompt }] };
  if (Array.isArray(prompt) && prompt.length > 0 && prompt.every((m) => m && typeof m === 'object' && typeof m.role === 'string')) return row as DatasetRow;
  throw new Error(`${where}: 'prompt' must be a string or a non-empty list of {role, content} messages`);
}

/** JSONL rows for an environment class: any object per line, `prompt` optional (datasetRow). */
export function parseEnvClassDataset(text: string, source: string): DatasetRow[] {
  const rows: DatasetRow[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw new Error(`${source}:${i + 1}: not JSON (${(err as Error).message})`);
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${source}:${i + 1}: each line must be a JSON object (a dataset row)`);
    rows.push(datasetRow(value as Record<string, unknown>, `${source}:${i + 1}`));
  });
  if (rows.length === 0) throw new Error(`${source}: no rows`);
  return rows;
}

/** Imports module text (env-class-module.ts) with `webgrpo/openenv` bound to this trainer's client, and `webgrpo/images`. */
export async function loadEnvClassModule(text: string, o: Omit<ModuleTextOptions, 'hostModules'> & { source: string }): Promise<EnvClassModule> {
  const openenv = openenvNamespace as unknown as Record<string, unknown>;
  const ns = await importModuleText(text, { ...o, hostModules: { 'webgrpo/openenv': openenv, 'webgrpo/images': IMAGES } });
  return envClassModule(ns, text, o.source);
}

/** One tool of a class: how the model sees it and how it is called. */
interface ClassTool {
  declaration: ToolDeclaration;
  schema?: ToolSchema;
  /** Argument names in call order (the method's positional parameters). */
  params: string[];
  async: boolean;
}

/** Public methods along the prototype chain, as Python's `inspect.getmembers(instance, ismethod)` finds them. */
function publicMethods(Cls: EnvClass): Map<string, (...args: unknown[]) => unknown> {
  const methods = new Map<string, (...args: unknown[]) => unknown>();
  for (let proto = Cls.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (methods.has(name) || NOT_TOOLS.has(name) || name.startsWith('_')) continue;
      const desc = Object.getOwnPropertyDescriptor(proto, name)!;
      if (typeof desc.value === 'function') methods.set(name, desc.value as (...args: unknown[]) => unknown);
    }
  }
  return methods;
}

interface StaticToolSchema {
  description: string;
  parameters?: { type?: 'object'; properties?: Record<string, Record<string, unknown>>; required?: string[] };
  return?: Record<string, unknown>;
}

/** The tools of `Cls`: JSDoc schemas (or `static toolSchemas[name]`), sorted by name by envTools later. */
export function classTools(Cls: EnvClass, name: string | null, mod: Pick<EnvClassModule, 'source' | 'text'>, docs: DocumentedMethod[] = documentedMethods(mod.text)): ClassTool[] {
  const statics = ((Cls as unknown as { toolSchemas?: Record<string, StaticToolSchema> }).toolSchemas ?? {}) as Record<string, StaticToolSchema>;
  const chain: string[] = [];
  for (let c: unknown = Cls; typeof c === 'function' && c !== Function.prototype; c = Object.getPrototypeOf(c)) chain.push((c as { name: string }).name);
  const tools: ClassTool[] = [];
  for (const [method, fn] of publicMethods(Cls)) {
    const where = `${mod.source}: ${label(Cls, name)}, tool '${method}'`;
    const async = fn.constructor?.name === 'AsyncFunction';
    const given = statics[method];
    if (given) {
      const properties = given.parameters?.properties ?? {};
      const fnSchema: ToolSchema['function'] = { name: method, description: given.description, parameters: { type: 'object', properties, ...(given.parameters?.required ? { required: given.parameters.required } : {}) }, ...(given.return ? { return: given.return } : {}) };
      tools.push({ declaration: { name: method, description: given.description, parameters: [] }, schema: { type: 'function', function: fnSchema }, params: Object.keys(properties), async });
      continue;
    }
    // The nearest class up the chain that documents it (a subclass may inherit a documented tool).
    const doc = chain.map((c) => docs.find((d) => d.method === method && d.className === c)).find((d) => d) ?? docs.find((d) => d.method === method && d.className === null);
    if (!doc) throw new Error(`${where} has no JSDoc: write /** What it does. @param {type} name description … */ above it (the model reads it), give it in static toolSchemas, or make it private (a leading _ or #)`);
    const declaration = declarationFromJsdoc(method, doc, where);
    tools.push({ declaration, params: declaration.parameters.map((p) => p.name), async });
  }
  return tools;
}

/** Text from a class, cut to MAX_CLASS_TEXT with a note saying so. */
function bounded(text: string): string {
  if (text.length <= MAX_CLASS_TEXT) return text;
  return `${text.slice(0, MAX_CLASS_TEXT)}\n[… ${text.length - MAX_CLASS_TEXT} more characters cut by the trainer]`;
}

/**
 * A tool's return value as the rollout takes it: a list passes as content blocks (their texts cut);
 * anything else becomes its text as TRL's `str(result)` (pyStr), cut.
 */
function boundedResult(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((b) => (b && typeof b === 'object' && typeof (b as { text?: unknown }).text === 'string' ? { ...b, text: bounded((b as { text: string }).text) } : b));
  return bounded(typeof value === 'string' ? value : pyStr(value));
}

/** reset's return: a string, null, or text content blocks (image blocks from reset are not supported yet). */
function observationText(value: unknown, where: string): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return bounded(value);
  if (Array.isArray(value)) {
    const texts = value.map((b) => (b && typeof b === 'object' && (b as { type?: unknown }).type === 'text' && typeof (b as { text?: unknown }).text === 'string' ? (b as { text: string }).text : null));
    if (texts.every((t) => t !== null)) return bounded(texts.join(''));
    throw new Error(`${where}: reset returned content blocks other than text; webgrpo appends text observations only (return a string, or [{type: 'text', text}])`);
  }
  throw new Error(`${where}: reset returned a ${typeof value}; it must return a string, content blocks or null`);
}

/**
 * One rollout slot's environment: the user's instance(s) behind the trainer's ToolEnv contract. In the
 * dict form a slot keeps one instance per environment name, created when a row first needs it, and
 * reused after (TRL's pool: construct once, reset often).
 */
export class ClassEnv implements ToolEnv {
  private readonly instances = new Map<string | null, Record<string, unknown>>();
  private currentName: string | null;
  private current: Record<string, unknown> | null = null;

  constructor(
    private readonly mod: EnvClassModule,
    private readonly toolsByName: ReadonlyMap<string | null, ClassTool[]>,
    /** The run's seeded episodes (play-episode.ts): each reset's EnvClient resets get the next seed. */
    private readonly seeds?: EpisodeSeeds,
  ) {
    this.currentName = mod.classes.keys().next().value!;
  }

  /** The user's instance of the last reset (reward functions read it as TRL's `environments[i]`). */
  get instance(): Record<string, unknown> | null {
    return this.current;
  }

  get tools(): Tool[] {
    const inst = this.current;
    return this.toolsByName.get(this.currentName)!.map((t): Tool => ({
      declaration: t.declaration,
      ...(t.schema ? { schema: t.schema } : {}),
      kind: t.async ? 'async' : 'sync',
      call: async (args) => {
        if (!inst) throw new Error('the environment was not reset');
        const fn = inst[t.declaration.name] as (...a: unknown[]) => unknown;
        return boundedResult(await fn.apply(inst, t.params.map((p) => args[p])));
      },
    }));
  }

  async reset(row: DatasetRow): Promise<string | null> {
    const multi = !this.mod.classes.has(null);
    let name: string | null = null;
    let kwargs: Record<string, unknown> = row;
    if (multi) {
      const { environment, ...rest } = row;
      if (typeof environment !== 'string' || !this.mod.classes.has(environment)) {
        throw new Error(`a row has environment=${JSON.stringify(environment)}, which is not among the module's environments: ${[...this.mod.classes.keys()].map((k) => `'${k}'`).join(', ')}`);
      }
      name = environment;
      kwargs = rest;
    }
    let inst = this.instances.get(name);
    if (!inst) {
      const Cls = this.mod.classes.get(name)!;
      inst = new Cls();
      this.instances.set(name, inst);
    }
    this.currentName = name;
    this.current = inst;
    const where = `${this.mod.source}: ${label(this.mod.classes.get(name)!, name)}`;
    // Drawn in reset order, as the built-in envs' seeded openers draw theirs (one seed per episode).
    const seed = this.seeds?.nextSeed();
    const reset = withResetDefaults(seed === undefined ? null : { seed }, () => (inst.reset as (r: unknown) => unknown).call(inst, kwargs));
    return observationText(await reset, where);
  }

  async close(): Promise<void> {
    const inst = this.current;
    if (inst && typeof inst.close === 'function') await (inst.close as () => unknown).call(inst);
  }
}

/** TRL passes the env instances to reward functions: unwrap the slots. */
function userInstances(environments: readonly unknown[]): unknown[] {
  return environments.map((env) => (env instanceof ClassEnv ? env.instance : env));
}

function named(name: string, fn: RewardFunction): RewardFunction {
  Object.defineProperty(fn, 'name', { value: name });
  return fn;
}

/**
 * The reward sources: the module's functions (called with the user's instances), then one per class
 * with `getReward()` (TRL's get_reward: named after the class, weight 1, null for other classes' rollouts).
 */
export function classRewardFuncs(mod: EnvClassModule): RewardFunction[] {
  const funcs = mod.rewardFuncs.map((f) => named(f.name, (args: RewardArgs) => f({ ...args, environments: userInstances(args.environments) })));
  const seen = new Set<EnvClass>();
  for (const Cls of mod.classes.values()) {
    const method = typeof Cls.prototype.getReward === 'function' ? 'getReward' : typeof Cls.prototype.get_reward === 'function' ? 'get_reward' : null;
    if (!method || seen.has(Cls)) continue;
    seen.add(Cls);
    funcs.push(named(Cls.name || 'Environment', async ({ environments }) =>
      Promise.all(userInstances(environments).map(async (inst) => {
        if (!inst || (inst as object).constructor !== Cls) return null;
        // Anything but a number or null is refused by computeRewardMatrix, naming this function.
        return (await ((inst as Record<string, unknown>)[method] as () => unknown).call(inst)) as number | null;
      })),
    ));
  }
  if (funcs.length === 0) throw new Error(`${mod.source}: no reward source: export rewardFuncs, or give the class a getReward() method`);
  return funcs;
}

/** The env-server's built-in env names a class may ask `envUrl()` for. */
const SERVED_ENVS = ['echo', 'catch', 'wordle', 'sudoku', 'browsergym'] as const;

export interface EnvClassTaskOptions {
  /** `--dataset` rows; else the module's `dataset`; else none (the environment owns the data). */
  rows?: DatasetRow[] | null;
  /** One env base URL for every name (`--env-url`); else the in-process env-server's. */
  envUrl?: string | null;
}

/** Defaults a class task adds under the module's config: a hung class is cut (the rollout's own timeouts). */
const CLASS_DEFAULTS: Record<string, unknown> = { env_call_timeout_s: 60 };

/** The module as a task (task.ts): the same object the built-in tasks are, so every path takes it. */
export function envClassTask(mod: EnvClassModule, o: EnvClassTaskOptions = {}): ChatTemplateTask {
  const docs = documentedMethods(mod.text);
  const toolsByName = new Map([...mod.classes].map(([name, Cls]) => [name, classTools(Cls, name, mod, docs)]));
  const rows = o.rows ?? mod.dataset;
  if (!mod.classes.has(null) && rows === null) {
    throw new Error(`${mod.source} has several environments (${[...mod.classes.keys()].join(', ')}): give rows with an 'environment' column (--dataset FILE.jsonl, or export const dataset), as TRL's dict environment_factory needs`);
  }
  return {
    name: 'env-class',
    // An empty dataset: the trainer drives the loop with empty prompts and reset() supplies the prompt.
    dataset: (size) => (rows === null ? [] : Array.from({ length: size ?? rows.length }, (_, i) => structuredClone(rows[i % rows.length]!))),
    envFactory: (urls, open) => {
      publishEnvUrls(urls, o.envUrl ?? null);
      const seeds = open && 'nextSeed' in open ? (open as unknown as EpisodeSeeds) : undefined;
      return () => new ClassEnv(mod, toolsByName, seeds);
    },
    rewardFuncs: classRewardFuncs(mod),
    config: { ...CLASS_DEFAULTS, ...mod.config },
  };
}

/** The URLs `envUrl(name)` returns: `--env-url` for every name, else the in-process env-server's routes. */
function publishEnvUrls(urls: Partial<Record<EnvUrlName, string>>, override: string | null): void {
  setDefaultEnvUrl(override);
  if (override) {
    setEnvUrls(Object.fromEntries(SERVED_ENVS.map((n) => [n, override])));
    return;
  }
  // The in-process server serves every built-in env under /envs/<name>.
  const base = urls.echo?.replace(/\/envs\/echo$/, '');
  setEnvUrls({ ...(base ? Object.fromEntries(SERVED_ENVS.map((n) => [n, `${base}/envs/${n}`])) : {}), ...urls });
}

/**
 * Module TEXT → the task, in one call: what the app's "Your environment" editor gives (a pasted module has
 * no file, so relative imports are refused) and what a stored run's module text is reloaded with.
 */
export async function envClassTaskFromText(text: string, o: EnvClassTaskOptions & Omit<ModuleTextOptions, 'hostModules'> & { source?: string } = {}): Promise<ChatTemplateTask> {
  const { rows, envUrl, ...load } = o;
  const mod = await loadEnvClassModule(text, { ...load, source: o.source ?? 'your environment' });
  return envClassTask(mod, { rows, envUrl });
}
