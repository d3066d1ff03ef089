// The engine's training side. The Engine delegates backward, zeroGrad, step, setTrainable,
// saveState, loadState, exportAdapter and readGrads to the TrainState made here.

import type { EngineInternals } from '../internals.ts';
import type { BackwardRequest, NamedTensor, OptimizerConfig, StepResult, TrainableMode } from '../types.ts';
import { BackwardBuffers, runBackward } from './backward.ts';
import { TrainOps, type GemmVariant } from './ops.ts';
import { Optimizer } from './optimizer.ts';
import { exportPeftAdapter, loadTrainState, readTensors, saveTrainState } from './state.ts';
import { createTrainableSet, type TrainableSet } from './trainable.ts';


export interface TrainState {
  /** The current mode ('none' until setTrainable). */
  readonly mode: TrainableMode;
  setTrainable(mode: TrainableMode): void;
  /** Accumulates the gradients of L = Σ dLdLogp·logp (+ Σ dLdEntropy·entropy) per scored token into the trainable grads. */
  backward(req: BackwardRequest): Promise<void>;
  zeroGrad(): void;
  /** clip_grad_norm_ + AdamW, then zeroes the gradients. */
  step(opt: OptimizerConfig): Promise<StepResult>;
  saveState(): Promise<{ tensors: NamedTensor[]; step: number }>;
  loadState(state: { tensors: NamedTensor[]; step: number }): Promise<void>;
  exportAdapter(baseModelName: string): Promise<{ adapterConfig: Record<string, unknown>; tensors: NamedTensor[] }>;
  /** Trainable gradients: checkpoint names (full; tied embedding carries both shares) or `<linear>.lora_A.weight`/`lora_B`. */
  readGrads(): Promise<NamedTensor[]>;
  /** Backward's buffers, kept between calls. */
  readonly backwardBuffers: BackwardBuffers;
  destroy(): void;
}

export interface TrainStateOptions {
  /** GEMM kernel of the backward pass; default: 'blocked' on software adapters, 'tiled' on GPUs. */
  gemm?: GemmVariant;
}

export function createTrainState(internals: EngineInternals, opts: TrainStateOptions = {}): TrainState {
  const ops = new TrainOps(internals, opts.gemm);
  const backwardBuffers = new BackwardBuffers(internals);
  let set: TrainableSet | null = null;
  let optimizer: Optimizer | null = null;

  const need = (what: string): { set: TrainableSet; optimizer: Optimizer } => {
    if (!set || !optimizer) throw new Error(`${what}: nothing is trainable; call setTrainable({ kind: 'lora', … }) or setTrainable({ kind: 'full' }) first`);
    return { set, optimizer };
  };
  const release = () => {
    optimizer?.destroy();
    set?.destroy();
    optimizer = null;
    set = null;
  };

  return {
    get mode(): TrainableMode {
      return set?.mode ?? { kind: 'none' };
    },
    setTrainable(mode) {
      release();
      set = createTrainableSet(internals, mode);
      optimizer = set ? new Optimizer(internals, ops, set) : null;
    },
    async backward(req) {
      const s = need('backward').set;
      await s.ready;
      await runBackward(internals, ops, s, req, backwardBuffers);
    },
    zeroGrad() {
      const { optimizer: opt } = need('zeroGrad');
      const rec = internals.recorder('zero grad');
      opt.encodeZeroGrad(rec);
      // No read-backs: submit() queues the work synchronously.
      void rec.submit();
    },
    async step(opt) {
      const s = need('step');
      await s.set.ready;
      return s.optimizer.apply(opt);
    },
    async saveState() {
      const s = need('saveState');
      return saveTrainState(internals, s.set, s.optimizer.step);
    },
    async loadState(state) {
      const s = need('loadState');
      s.optimizer.step = loadTrainState(internals, s.set, state);
    },
    async exportAdapter(baseModelName) {
      return exportPeftAdapter(internals, need('exportAdapter').set, baseModelName);
    },
    async readGrads() {
      return readTensors(internals, need('readGrads').set.tensors, 'grad');
    },
    get backwardBuffers() {
      return backwardBuffers;
    },
    destroy() {
      release();
      backwardBuffers.destroy();
    },
  };
}
