// The scripted web agent for the SFT warm-up: it reads the goal and the accessibility tree of the
// reset observation (as the model sees it), plans the tool calls that solve the task, and plays them
// through the same tool env the model uses. Only won episodes become transcripts.

import type { ToolCall } from '../../model/chat-template.ts';
import type { DatasetRow } from '../rollout/env.ts';
import type { ClassEnv } from './env-class.ts';
import { browsergymTask, mixTaskAt, type BrowserGymMix } from './browsergym-task.ts';
import type { Transcript } from '../grpo/sft.ts';
import { playEpisode, seededEpisodes, type SeedOf } from './play-episode.ts';

export interface TreeLine {
  bid: string | null;
  role: string;
  name: string;
  /** What follows the name: ` value=…`, `, checked='false'`, … */
  rest: string;
}

const LINE = /^\t*(?:\[(\w+)\] )?(\S+) (?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")(.*)$/;

/** The tree lines of a formatted observation (`Page structure:` part). */
export function parseTree(observation: string): TreeLine[] {
  const at = observation.indexOf('Page structure:\n');
  if (at < 0) return [];
  return observation
    .slice(at + 'Page structure:\n'.length)
    .split('\n')
    .flatMap((line) => {
      const m = LINE.exec(line);
      if (!m) return [];
      const quoted = m[3] ?? m[4] ?? '';
      return [{ bid: m[1] ?? null, role: m[2]!, name: quoted.replace(/\\(.)/g, '$1'), rest: m[5] ?? '' }];
    });
}

export function goalOf(observation: string): string {
  const m = /^Goal: (.*)$/m.exec(observation);
  return m ? m[1]! : '';
}

function call(name: string, args: Record<string, unknown>): ToolCall {
  return { type: 'function', function: { name, arguments: args } };
}

/** The tool calls that solve the task shown, or null when the solver cannot tell. */
export function planWebTask(observation: string): ToolCall[] | null {
  const goal = goalOf(observation);
  const lines = parseTree(observation).filter((l) => l.bid !== null);
  const find = (role: string, name?: string | RegExp) =>
    lines.find((l) => l.role === role && (name === undefined || (typeof name === 'string' ? l.name === name : name.test(l.name))));
  const click = (line: TreeLine | undefined) => (line ? call('click', { bid: line.bid }) : null);
  const fill = (line: TreeLine | undefined, text: string) => (line ? call('fill', { bid: line.bid, text }) : null);
  const textboxes = lines.filter((l) => l.role === 'textbox');
  const submit = () => click(find('button', 'Submit'));
  const all = (calls: (ToolCall | null)[]): ToolCall[] | null => (calls.every((c) => c !== null) ? (calls as ToolCall[]) : null);
  let m: RegExpExecArray | null;

  if (goal === 'Click the button.') return all([click(find('button'))]);
  if (goal === 'Click button ONE.') return all([click(find('button', 'ONE'))]);
  if (goal === 'Click button ONE, then click button TWO.') return all([click(find('button', 'ONE')), click(find('button', 'TWO'))]);
  if ((m = /^Click on the "(.+)" button\.$/.exec(goal))) return all([click(find('button', m[1]!))]);
  if (goal === 'Close the dialog box by clicking the "x".') return all([click(find('button', 'Close'))]);
  if ((m = /^Click the button in the dialog box labeled "(.+)"\.$/.exec(goal))) return all([click(find('button', m[1] === 'x' ? 'Close' : m[1]!))]);
  if ((m = /^Click on Tab #(\d+)\.$/.exec(goal))) return all([click(find('link', `Tab #${m[1]}`))]);
  if (goal === 'Expand the section below and click submit.') return all([click(find('button', /^Section #/)), submit()]);
  if ((m = /^Select (.+) from the list and click Submit\.$/.exec(goal))) return all([click(find('combobox')), call('send_keys', { text: m[1] }), submit()]);
  if ((m = /^Select (.+) and click Submit\.$/.exec(goal))) {
    if (find('radio')) return all([click(find('radio', m[1]!)), submit()]);
    const wanted = m[1] === 'nothing' ? [] : m[1]!.split(', ');
    return all([...wanted.map((name) => click(find('checkbox', name))), submit()]);
  }
  if ((m = /^Click on a "(\w+)" widget\.$/.exec(goal))) {
    // Text inputs and textareas are both `textbox` in the tree: the solver cannot tell them apart.
    return m[1] === 'text' || m[1] === 'textarea' ? null : all([click(find(m[1]!))]);
  }
  if ((m = /^Enter "(.+)" into the text field and press Submit\.$/.exec(goal))) return all([fill(textboxes[0], m[1]!), submit()]);
  if ((m = /^Type "(.+)" in all (upper|lower) case letters in the text input and press Submit\.$/.exec(goal))) {
    return all([fill(textboxes[0], m[2] === 'upper' ? m[1]!.toUpperCase() : m[1]!.toLowerCase()), submit()]);
  }
  if ((m = /^Enter the password "(.+)" into both text fields and press submit\.$/.exec(goal))) return all([fill(textboxes[0], m[1]!), fill(textboxes[1], m[1]!), submit()]);
  if ((m = /^Enter the username "(.+)" and the password "(.+)" into the text fields and press login\.$/.exec(goal))) {
    return all([fill(textboxes[0], m[1]!), fill(textboxes[1], m[2]!), click(find('button', 'Login'))]);
  }
  if (goal === 'Focus into the textbox.') return all([click(textboxes[0])]);
  if ((m = /^Focus into the (\d)(?:st|nd|rd|th) input textbox\.$/.exec(goal))) return all([click(textboxes[Number(m[1]) - 1])]);
  if (goal.startsWith('Solve the math problem')) {
    const problem = parseTree(observation).find((l) => l.role === 'StaticText' && /^-?\d+ [-+x] -?\d+ =$/.test(l.name));
    if (!problem) return null;
    const [a, op, b] = problem.name.split(' ');
    const x = Number(a);
    const y = Number(b);
    return all([fill(textboxes[0], String(op === '+' ? x + y : op === '-' ? x - y : x * y)), submit()]);
  }
  return null;
}

/**
 * Solved episodes against the browsergym env at `baseUrl`: of the run's own dataset `rows` when given
 * (so a run on `browsergym:click-test,enter-text` warms up on those tasks), else of the `mix`
 * (default: every task, easy-biased); tries at most 3× `episodes` resets, keeping only wins.
 */
export async function browsergymTranscripts(opts: { baseUrl: string; episodes: number; seed: number; mix?: BrowserGymMix; rows?: readonly DatasetRow[]; seedOf?: SeedOf }): Promise<Transcript[]> {
  // Training's seeds (the caller's seed space): a warm-up never plays a held-out page.
  const task = await browsergymTask(opts.mix ?? 'mix');
  const envs = task.envFactory({ browsergym: opts.baseUrl }, seededEpisodes(opts.seed, opts.seedOf));
  const rows = opts.rows && opts.rows.length > 0 ? opts.rows : null;
  const out: Transcript[] = [];
  for (let i = 0; out.length < opts.episodes && i < opts.episodes * 3; i++) {
    const row: DatasetRow = rows ? rows[i % rows.length]! : { ...task.dataset(1)[0]!, task_name: mixTaskAt(opts.mix ?? 'mix', i) };
    const env = envs() as ClassEnv;
    const game = () => env.instance as { done: boolean; reward: number };
    let plan: ToolCall[] | null = null;
    const transcript = await playEpisode(env, row, (observation, turn) => {
      if (turn === 0) plan = planWebTask(observation);
      return game().done ? null : (plan?.[turn] ?? null);
    }, 10, opts.baseUrl);
    if (game().reward === 1) out.push(transcript);
  }
  return out;
}
