// What the peer benchmark's Node side sends each engine in the browser, and what each sends back.

export interface PeerArgs {
  /** Base URL and file names of the base checkpoint (our engine) — the exported folder is served beside it. */
  modelUrl: string;
  modelFiles: string[];
  /** The PEFT adapter our engine loads (transformers.js runs it merged into the export). */
  loraUrl: string | null;
  loraFiles: string[];
  promptIds: number[];
  newTokens: number;
  batches: number[];
  /** Each timing is the fastest of this many runs. */
  reps: number;
  /** Ids whose log-probs both engines report (position t scored from positions < t). */
  scoreIds: number[];
}

export interface PeerSide {
  device: string;
  /** Our engine: whether the WebGPU adapter is a CPU emulation (SwiftShader, lavapipe). */
  software?: boolean;
  /** Per batch size: one prefill + first token, and the whole greedy generation of newTokens. */
  runs: { batch: number; prefillMs: number; generateMs: number }[];
  /** Greedy tokens of the B=1 run. */
  greedy: number[];
  logprobs: number[];
}
