// A render budget for chat templates. A template is code from the checkpoint's author and
// @huggingface/jinja runs it synchronously with no limit of its own: nested `range()` loops spin
// forever (and a stuck synchronous loop also keeps Ctrl-C/SIGTERM handlers from running),
// `range(3e8)` allocates gigabytes, recursive macros and doubling strings grow without bound.
// The interpreter evaluates every node through one public method, `Interpreter.prototype.evaluate`;
// wrapping it meters a render from inside (steps, wall time, nesting depth, the size of every value
// made), in Node and in the browser's worker alike, and stays a pass-through outside `withRenderBudget`.

import { Interpreter } from '@huggingface/jinja';

export interface RenderBudget {
  /** Nodes evaluated (plus items made by range()): the deterministic bound on a render's work. */
  maxSteps: number;
  /** Wall time, for steps that are individually expensive (joins, replaces of long strings). */
  maxMs: number;
  /** Nested evaluations: recursive macros fail here, with the budget named, before the JS stack does. */
  maxDepth: number;
  /** Longest string any expression may make (a prompt of 262,144 tokens is about a million characters). */
  maxStringChars: number;
  /** Most items of one list or mapping, range() included (checked before range allocates). */
  maxItems: number;
  /** Characters of all strings evaluated in one render: bounds output and memory that steps × maxStringChars would not. */
  maxProducedChars: number;
}

/**
 * Real chat templates (Qwen3's, Qwen3.5's) render a long multi-turn rollout in well under 100,000
 * steps and a few milliseconds; these limits leave them two orders of magnitude of room while a
 * hostile template stops within seconds and a few hundred MB.
 */
export const RENDER_BUDGET: RenderBudget = {
  maxSteps: 10_000_000,
  maxMs: 5_000,
  maxDepth: 1_000,
  maxStringChars: 4 * 1024 * 1024,
  maxItems: 1_000_000,
  maxProducedChars: 64 * 1024 * 1024,
};

/** Why a render was stopped; the message names the template and the budget. */
export class RenderBudgetError extends Error {}

/** The runtime values the interpreter returns: only their type name and payload are read. */
interface RuntimeValue {
  type: string;
  value: unknown;
}

const CLOCK_EVERY_STEPS = 1024;

class Meter {
  steps = 0;
  depth = 0;
  produced = 0;
  private readonly deadline: number;

  constructor(
    readonly budget: RenderBudget,
    private readonly label: string,
  ) {
    this.deadline = performance.now() + budget.maxMs;
  }

  fail(what: string): never {
    const { maxSteps, maxMs } = this.budget;
    throw new RenderBudgetError(`chat template (${this.label}) exceeded its render budget (${maxSteps} steps / ${maxMs / 1000} s): ${what}`);
  }

  step(count = 1): void {
    this.steps += count;
    if (this.steps > this.budget.maxSteps) this.fail(`ran more than ${this.budget.maxSteps} steps`);
    if (this.steps % CLOCK_EVERY_STEPS < count && performance.now() > this.deadline) this.fail(`ran longer than ${this.budget.maxMs / 1000} s`);
  }

  enter(): void {
    this.step();
    if (++this.depth > this.budget.maxDepth) this.fail(`nested more than ${this.budget.maxDepth} evaluations deep (unbounded recursion?)`);
  }

  /** A number passed to a call or filter: sizes (widths, counts) above the longest string are refused before the call allocates. */
  argument(value: RuntimeValue): void {
    if ((value.type === 'IntegerValue' || value.type === 'FloatValue') && Math.abs(value.value as number) > this.budget.maxStringChars) {
      this.fail(`passed the number ${value.value as number} to a call or filter (limit ${this.budget.maxStringChars})`);
    }
  }

  /**
   * Checks a node's value against the size limits. Looked-up strings count toward the total too:
   * a loop's body is appended to its output outside `evaluate`, so what it outputs is counted here.
   */
  made(value: RuntimeValue): void {
    const { maxStringChars, maxItems, maxProducedChars } = this.budget;
    if (value.type === 'StringValue') {
      const length = (value.value as string).length;
      if (length > maxStringChars) this.fail(`made a string of ${length} characters (limit ${maxStringChars})`);
      this.produced += length;
      if (this.produced > maxProducedChars) this.fail(`made more than ${maxProducedChars} characters of strings in all`);
    } else if (value.type === 'ArrayValue' || value.type === 'TupleValue') {
      const length = (value.value as unknown[]).length;
      if (length > maxItems) this.fail(`made a list of ${length} items (limit ${maxItems})`);
    } else if (value.type === 'ObjectValue') {
      const size = (value.value as Map<string, unknown>).size;
      if (size > maxItems) this.fail(`made a mapping of ${size} items (limit ${maxItems})`);
    }
  }
}

/** The meter of the render in progress; rendering is synchronous, so there is at most one. */
let active: Meter | null = null;

type Evaluate = (this: Interpreter, node: { type: string } | undefined, environment: unknown) => RuntimeValue;
type Run = (this: Interpreter, program: unknown) => RuntimeValue;
type EvaluateBlock = (this: Interpreter, statements: unknown[], environment: unknown) => RuntimeValue;
type EvaluateArguments = (this: Interpreter, args: unknown[], environment: unknown) => [RuntimeValue[], Map<string, RuntimeValue>];
// `evaluateBlock` (a loop body, an if branch) and `evaluateArguments` are private in the typings but
// are the interpreter's own seams: a loop iteration with an empty body evaluates no node, and a
// filter's width (`indent(5e8)`) is allocated inside one step.
const proto = Interpreter.prototype as unknown as { evaluate: Evaluate; run: Run; evaluateBlock: EvaluateBlock; evaluateArguments: EvaluateArguments };
const { evaluate, run, evaluateBlock, evaluateArguments } = proto;
proto.evaluate = function metered(node, environment) {
  const meter = active;
  if (meter === null || node === undefined) return evaluate.call(this, node, environment);
  meter.enter();
  try {
    const value = evaluate.call(this, node, environment);
    meter.made(value);
    return value;
  } finally {
    meter.depth--;
  }
};
proto.evaluateBlock = function meteredBlock(statements, environment) {
  const meter = active;
  if (meter === null) return evaluateBlock.call(this, statements, environment);
  meter.step();
  const value = evaluateBlock.call(this, statements, environment);
  meter.made(value);
  return value;
};
proto.evaluateArguments = function meteredArguments(args, environment) {
  const evaluated = evaluateArguments.call(this, args, environment);
  if (active !== null) for (const value of [...evaluated[0], ...evaluated[1].values()]) active.argument(value);
  return evaluated;
};
// A render's globals are set up before it runs; under a budget, `range` is swapped for the bounded one.
proto.run = function meteredRun(program) {
  if (active !== null) {
    this.global.variables.delete('range');
    this.global.set('range', boundedRange(active));
  }
  return run.call(this, program);
};

/**
 * Python's `range()` as templates call it, refusing before it allocates more than the budget's
 * items (the library's own builds the whole list first: range(3e8) is 2.7 GB).
 */
function boundedRange(meter: Meter): (...args: number[]) => number[] {
  return (...args) => {
    const [start, stop, step = 1] = args.length === 1 ? [0, args[0]!] : args;
    if (![start, stop, step].every((x) => typeof x === 'number' && Number.isFinite(x))) throw new Error(`range() needs finite numbers, got ${args.join(', ')}`);
    if (step === 0) throw new Error('range() step must not be zero');
    const length = Math.max(0, Math.ceil((stop! - start!) / step));
    if (length > meter.budget.maxItems) meter.fail(`range() of ${length} items (limit ${meter.budget.maxItems})`);
    meter.step(length);
    return Array.from({ length }, (_, i) => start! + i * step);
  };
}

/**
 * Runs `render` (one synchronous template render) under `budget`; `label` names the template in
 * the error (its file).
 */
export function withRenderBudget<T>(label: string, render: () => T, budget: RenderBudget = RENDER_BUDGET): T {
  if (active !== null) throw new Error('withRenderBudget: a render is already in progress');
  const meter = new Meter(budget, label);
  active = meter;
  try {
    return render();
  } catch (err) {
    // V8's own limits (stack, string length) are the budget too, reached by one step.
    if (err instanceof RangeError) meter.fail(err.message);
    throw err;
  } finally {
    active = null;
  }
}
