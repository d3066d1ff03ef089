// A deterministic stand-in for the WebGPU engine: a "model" with one logit bias per token id,
// logp(token) = log_softmax(θ + context)[token] over a tiny vocab, trained with plain AdamW. It
// records every call so tests can check the trainer's order of operations and what it passed.

import type {
  BackwardRequest,
  Engine,
  NamedTensor,
  OptimizerConfig,
  ScoreOutput,
  ScoreRequest,
  SequenceHandle,
  StepResult,
} from '../../src/engine/types.ts';

export type Call =
  | { kind: 'score'; n: number; adapters: boolean; temperature: number }
  | { kind: 'backward'; n: number; dLdLogp: Float32Array[]; dLdEntropy: Float32Array[] | null; ids: number[][] }
  | { kind: 'zeroGrad' }
  | { kind: 'step'; lr: number }
  | { kind: 'loadState' };

export const VOCAB = 8;

export class FakeEngine {
  readonly calls: Call[] = [];
  // f32 state, like the GPU's: a checkpoint then round-trips it exactly.
  theta = new Float32Array(VOCAB);
  private readonly theta0 = new Float32Array(VOCAB);
  private grad = new Float64Array(VOCAB);
  private m = new Float32Array(VOCAB);
  private v = new Float32Array(VOCAB);
  private t = 0;
  /** When set, score() returns NaN log-probs (to test the NaN guard). */
  poison = false;

  constructor(seed = 1) {
    for (let i = 0; i < VOCAB; i++) this.theta[i] = this.theta0[i] = Math.sin(seed * 13 + i) * 0.5;
  }

  /** logits at position p for sequence ids: θ (or θ₀ with adapters off) + a fixed context term. */
  private logits(ids: number[], p: number, adapters: boolean): number[] {
    const th = adapters ? this.theta : this.theta0;
    const prev = ids[p - 1] ?? 0;
    return Array.from({ length: VOCAB }, (_, k) => th[k]! + 0.3 * Math.cos(prev * 7 + k));
  }

  private probs(ids: number[], p: number, temperature: number, adapters: boolean): number[] {
    const z = this.logits(ids, p, adapters).map((x) => x / temperature);
    const mx = Math.max(...z);
    const e = z.map((x) => Math.exp(x - mx));
    const s = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / s);
  }

  async score(req: ScoreRequest): Promise<ScoreOutput> {
    const adapters = req.adapters ?? true;
    this.calls.push({ kind: 'score', n: req.sequences.length, adapters, temperature: req.temperature });
    const logprobs: Float32Array[] = [];
    const entropy: Float32Array[] = [];
    for (const s of req.sequences) {
      const T = s.ids.length - s.scoreFrom;
      const lp = new Float32Array(T);
      const h = new Float32Array(T);
      for (let t = 0; t < T; t++) {
        const p = this.probs(s.ids, s.scoreFrom + t, req.temperature, adapters);
        lp[t] = this.poison ? NaN : Math.log(p[s.ids[s.scoreFrom + t]!]!);
        h[t] = -p.reduce((a, q) => a + q * Math.log(q), 0);
      }
      logprobs.push(lp);
      entropy.push(h);
    }
    return { logprobs, entropy };
  }

  async backward(req: BackwardRequest): Promise<void> {
    this.calls.push({
      kind: 'backward',
      n: req.sequences.length,
      dLdLogp: req.dLdLogp.map((g) => Float32Array.from(g)),
      dLdEntropy: req.dLdEntropy ? req.dLdEntropy.map((g) => Float32Array.from(g)) : null,
      ids: req.sequences.map((s) => [...s.ids]),
    });
    req.sequences.forEach((s, i) => {
      const g = req.dLdLogp[i]!;
      const e = req.dLdEntropy?.[i];
      for (let t = 0; t < g.length; t++) {
        const pos = s.scoreFrom + t;
        const p = this.probs(s.ids, pos, req.temperature, true);
        const H = -p.reduce((a, q) => a + q * Math.log(q), 0);
        // d logp(tok)/dθ_k = (1[k = tok] − p_k) / temperature; dH/dθ_k = −p_k·(log p_k + H) / temperature
        for (let k = 0; k < VOCAB; k++) {
          const dEntropy = e ? -e[t]! * p[k]! * (Math.log(p[k]!) + H) : 0;
          this.grad[k]! += (g[t]! * ((k === s.ids[pos] ? 1 : 0) - p[k]!) + dEntropy) / req.temperature;
        }
      }
    });
  }

  zeroGrad(): void {
    this.calls.push({ kind: 'zeroGrad' });
    this.grad.fill(0);
  }

  async step(opt: OptimizerConfig): Promise<StepResult> {
    this.calls.push({ kind: 'step', lr: opt.learningRate });
    const norm = Math.sqrt(this.grad.reduce((a, x) => a + x * x, 0));
    const clip = opt.maxGradNorm > 0 && norm > opt.maxGradNorm ? opt.maxGradNorm / (norm + 1e-6) : 1;
    this.t++;
    for (let k = 0; k < VOCAB; k++) {
      const g = this.grad[k]! * clip;
      this.m[k] = opt.beta1 * this.m[k]! + (1 - opt.beta1) * g;
      this.v[k] = opt.beta2 * this.v[k]! + (1 - opt.beta2) * g * g;
      const mh = this.m[k]! / (1 - opt.beta1 ** this.t);
      const vh = this.v[k]! / (1 - opt.beta2 ** this.t);
      this.theta[k]! -= opt.learningRate * (mh / (Math.sqrt(vh) + opt.eps) + opt.weightDecay * this.theta[k]!);
    }
    return { gradNorm: norm, step: this.t };
  }

  async saveState(): Promise<{ tensors: NamedTensor[]; step: number }> {
    return {
      tensors: [
        { name: 'theta', shape: [VOCAB], data: Float32Array.from(this.theta) },
        { name: 'theta.exp_avg', shape: [VOCAB], data: Float32Array.from(this.m) },
        { name: 'theta.exp_avg_sq', shape: [VOCAB], data: Float32Array.from(this.v) },
      ],
      step: this.t,
    };
  }

  async loadState(state: { tensors: NamedTensor[]; step: number }): Promise<void> {
    this.calls.push({ kind: 'loadState' });
    const get = (n: string) => Float32Array.from(state.tensors.find((t) => t.name === n)!.data);
    this.theta = get('theta');
    this.m = get('theta.exp_avg');
    this.v = get('theta.exp_avg_sq');
    this.t = state.step;
  }

  /** Samples `len` tokens autoregressively from the current policy with a seeded generator. */
  sample(prefix: number[], len: number, rand: () => number): number[] {
    const ids = [...prefix];
    for (let i = 0; i < len; i++) {
      const p = this.probs(ids, ids.length, 1, true);
      let u = rand();
      let k = 0;
      while (k < VOCAB - 1 && u >= p[k]!) u -= p[k++]!;
      ids.push(k);
    }
    return ids.slice(prefix.length);
  }

  asEngine(): Engine {
    const unsupported = (name: string) => () => {
      throw new Error(`FakeEngine.${name} is not used by the trainer`);
    };
    return {
      config: {} as Engine['config'],
      gpu: {} as Engine['gpu'],
      weightDtype: 'f32',
      newSequence: unsupported('newSequence') as () => SequenceHandle,
      releaseSequence: unsupported('releaseSequence'),
      generate: unsupported('generate') as Engine['generate'],
      openDecode: unsupported('openDecode') as Engine['openDecode'],
      score: (r) => this.score(r),
      backward: (r) => this.backward(r),
      zeroGrad: () => this.zeroGrad(),
      step: (o) => this.step(o),
      setTrainable: () => {},
      saveState: () => this.saveState(),
      loadState: (s) => this.loadState(s),
      exportAdapter: unsupported('exportAdapter') as Engine['exportAdapter'],
      readGrads: unsupported('readGrads') as Engine['readGrads'],
      loadAdapter: unsupported('loadAdapter') as Engine['loadAdapter'],
      destroy: () => {},
    };
  }
}
