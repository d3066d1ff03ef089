// `/envs/browsergym`: OpenEnv's BrowserGym environment (specs/browsergym.md §2) over webgrpo's own
// MiniWoB-style tasks or a real MiniWoB++ folder (miniwob-source.ts), driven in one shared headless
// Chromium with a browser context per session.
// Its own session cap (default 8, $BROWSERGYM_MAX_CONCURRENT_ENVS) bounds the browser's memory
// below the server-wide cap.

import type { EnvDefinition } from '../types.ts';
import type { BrowserGymEnvironment as Instance } from './environment.ts';
import { actionJsonSchema, actionModel, validateModel } from '../validation.ts';
import { BASE_STATE_SCHEMA, observationSchema } from '../json-schema.ts';
import { defaultMetadata } from '../metadata.ts';
import { DEFAULT_RENDERER_HEAP_MB, DEFAULT_RENDERER_MEMORY_MB, SharedBrowser } from './browser.ts';
import { BrowserGymEnvironment } from './environment.ts';
import { DEFAULT_SCREENSHOT_MAX_SIDE } from './screenshot.ts';
import { parseAxtreeForm, type AxtreeForm } from './axtree.ts';
import type { MiniwobSource } from './miniwob-source.ts';
import { MINIWOB_TASKS, type MiniwobTask } from './tasks/index.ts';

export { MINIWOB_TASKS } from './tasks/index.ts';
export { MINIWOB_BASE_URL } from './miniwob-source.ts';

export const BROWSERGYM_ACTION = actionModel('BrowserGymAction', 'Action to be executed in a BrowserGym environment.', [
  { name: 'action_str', type: { kind: 'string' }, description: 'Natural language action string (e.g., "click(\'Submit\')")' },
]);

const BROWSERGYM_OBSERVATION_SCHEMA = observationSchema('BrowserGymObservation', 'Observation returned from a BrowserGym environment.', [
  { name: 'text', schema: { type: 'string' }, description: 'Text representation of the page (accessibility tree or pruned HTML)', default: '' },
  { name: 'url', schema: { type: 'string' }, description: 'Current URL of the page', default: '' },
  {
    name: 'screenshot',
    schema: { anyOf: [{ items: { items: { items: { type: 'integer' }, type: 'array' }, type: 'array' }, type: 'array' }, { type: 'null' }] },
    description: 'Screenshot as a nested list of RGB pixels (height x width x 3), only when requested',
    default: null,
  },
  { name: 'goal', schema: { type: 'string' }, description: 'Task goal/instruction', default: '' },
  { name: 'axtree_txt', schema: { type: 'string' }, description: 'Accessibility tree as text', default: '' },
  { name: 'pruned_html', schema: { type: 'string' }, description: 'Pruned HTML of the page', default: '' },
  { name: 'error', schema: { type: 'string' }, description: 'Error message of the last action, if any', default: '' },
  { name: 'last_action_error', schema: { type: 'boolean' }, description: 'Whether the last action resulted in an error', default: false },
]);

export interface BrowserGymEnvOptions {
  /** Sessions at once (each holds a browser context). Default $BROWSERGYM_MAX_CONCURRENT_ENVS, else 8. */
  maxConcurrentEnvs?: number;
  /** Task when reset names none. Default $BROWSERGYM_TASK_NAME, else click-test. */
  defaultTask?: string;
  /** Default $BROWSERGYM_VIEWPORT_WIDTH × $BROWSERGYM_VIEWPORT_HEIGHT, else 1280 × 720 (as OpenEnv). */
  viewport?: { width: number; height: number };
  /** The pages' episode time limit, ms (default 1 000 000, BrowserGym's). */
  episodeMaxTimeMs?: number;
  /**
   * The tree's form when reset names none (reset's `axtree` kwarg can): BrowserGym's own output, or
   * `classic`. Default $BROWSERGYM_AXTREE, else 'browsergym'.
   */
  axtree?: AxtreeForm;
  /**
   * Element actions (click, fill, …) wait this long for the page and the element. Default
   * $BROWSERGYM_ACTION_TIMEOUT_MS, else DEFAULT_ACTION_TIMEOUT_MS; must stay below the step deadline.
   */
  actionTimeoutMs?: number;
  /**
   * Hard deadline of one reset or step, ms: past it the session's browser context (and renderer) is
   * closed and the step answers an error. Default $BROWSERGYM_STEP_TIMEOUT_S × 1000, else 20 s.
   */
  stepTimeoutMs?: number;
  /** Screenshots' longest side, pixels. Default $BROWSERGYM_SCREENSHOT_MAX_SIDE, else 512 (TRL's VLM thumbnails). */
  screenshotMaxSide?: number;
  /** Steps per episode. Default $BROWSERGYM_MAX_EPISODE_STEPS, else 1000. */
  maxEpisodeSteps?: number;
  /** Each renderer's JS heap limit, MiB. Default $BROWSERGYM_RENDERER_HEAP_MB, else 256. */
  rendererHeapMb?: number;
  /** A renderer past this much private memory (MiB) is killed. Default $BROWSERGYM_RENDERER_MEMORY_MB, else 512. */
  rendererMemoryMb?: number;
  /** The tasks reset may pick (default: all of MINIWOB_TASKS). */
  tasks?: ReadonlyMap<string, MiniwobTask>;
  /** A real MiniWoB++ folder (miniwobSource()): its tasks replace the built-in ones. */
  miniwob?: MiniwobSource;
  /** Where the browser's warnings go (default stderr). */
  warn?: (line: string) => void;
}

/**
 * BrowserGym's 500 ms per element action fails correct actions on a busy machine (8 sessions on 2
 * cores: every click timed out). A wrong action waiting this long costs a step; a right one failing
 * costs the episode. It stays well inside the 20 s step deadline.
 */
export const DEFAULT_ACTION_TIMEOUT_MS = 5000;

/** No deadline may exceed this: a step that can hold a session for longer is not bounded in any useful sense. */
const MAX_STEP_TIMEOUT_S = 300;

function envInt(value: string | undefined, what: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${what} must be an integer from 1 to ${max}, got '${value}'`);
  return n;
}

export type BrowserGymEnvDefinition = EnvDefinition<Instance> & {
  /** The shared browser (its `contexts` count is the leak check). */
  readonly browser: SharedBrowser;
};

export function createBrowserGymEnv(options: BrowserGymEnvOptions = {}, env: NodeJS.ProcessEnv = process.env): BrowserGymEnvDefinition {
  const tasks = options.tasks ?? MINIWOB_TASKS;
  const names = options.miniwob ? options.miniwob.names : [...tasks.keys()];
  // A folder without click-test still has a default: its first task.
  const defaultTask = options.defaultTask ?? (env.BROWSERGYM_TASK_NAME || (names.includes('click-test') ? 'click-test' : names[0]!));
  if (!names.includes(defaultTask)) throw new Error(`browsergym: unknown default task '${defaultTask}' (have ${names.join(', ')})`);
  const browser = new SharedBrowser({
    rendererHeapMb: options.rendererHeapMb ?? envInt(env.BROWSERGYM_RENDERER_HEAP_MB, 'BROWSERGYM_RENDERER_HEAP_MB', DEFAULT_RENDERER_HEAP_MB),
    rendererMemoryMb: options.rendererMemoryMb ?? envInt(env.BROWSERGYM_RENDERER_MEMORY_MB, 'BROWSERGYM_RENDERER_MEMORY_MB', DEFAULT_RENDERER_MEMORY_MB),
    warn: options.warn,
  });
  const actionTimeoutMs = options.actionTimeoutMs ?? envInt(env.BROWSERGYM_ACTION_TIMEOUT_MS, 'BROWSERGYM_ACTION_TIMEOUT_MS', DEFAULT_ACTION_TIMEOUT_MS);
  const stepTimeoutMs = options.stepTimeoutMs ?? 1000 * envInt(env.BROWSERGYM_STEP_TIMEOUT_S, 'BROWSERGYM_STEP_TIMEOUT_S', 20, MAX_STEP_TIMEOUT_S);
  if (!(stepTimeoutMs > actionTimeoutMs)) throw new Error(`browsergym: the step deadline (${stepTimeoutMs} ms, BROWSERGYM_STEP_TIMEOUT_S) must exceed the element action timeout (${actionTimeoutMs} ms, BROWSERGYM_ACTION_TIMEOUT_MS)`);
  const settings = {
    tasks,
    browser,
    defaultTask,
    viewport: options.viewport ?? {
      width: envInt(env.BROWSERGYM_VIEWPORT_WIDTH, 'BROWSERGYM_VIEWPORT_WIDTH', 1280),
      height: envInt(env.BROWSERGYM_VIEWPORT_HEIGHT, 'BROWSERGYM_VIEWPORT_HEIGHT', 720),
    },
    episodeMaxTimeMs: options.episodeMaxTimeMs ?? 1_000_000,
    axtree: options.axtree ?? (env.BROWSERGYM_AXTREE ? parseAxtreeForm(env.BROWSERGYM_AXTREE, 'BROWSERGYM_AXTREE') : 'browsergym'),
    miniwob: options.miniwob,
    actionTimeoutMs,
    stepTimeoutMs,
    screenshotMaxSide: options.screenshotMaxSide ?? envInt(env.BROWSERGYM_SCREENSHOT_MAX_SIDE, 'BROWSERGYM_SCREENSHOT_MAX_SIDE', DEFAULT_SCREENSHOT_MAX_SIDE, 4096),
    maxEpisodeSteps: options.maxEpisodeSteps ?? envInt(env.BROWSERGYM_MAX_EPISODE_STEPS, 'BROWSERGYM_MAX_EPISODE_STEPS', 1000),
  };
  return {
    name: 'browsergym',
    metadata: defaultMetadata('BrowserGymEnvironment'),
    schema: { action: actionJsonSchema(BROWSERGYM_ACTION), observation: BROWSERGYM_OBSERVATION_SCHEMA, state: BASE_STATE_SCHEMA },
    validateAction: (data) => validateModel(BROWSERGYM_ACTION, data),
    create: () => new BrowserGymEnvironment(settings),
    maxConcurrentEnvs: options.maxConcurrentEnvs ?? envInt(env.BROWSERGYM_MAX_CONCURRENT_ENVS, 'BROWSERGYM_MAX_CONCURRENT_ENVS', 8),
    dispose: () => browser.release(),
    browser,
  };
}

/** The built-in definition (`/envs/browsergym`); Chromium starts at its first reset. */
export const browsergymEnv: BrowserGymEnvDefinition = createBrowserGymEnv();
