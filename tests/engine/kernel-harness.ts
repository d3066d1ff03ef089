// Runs single kernels on small arrays, outside any engine: the linear-attention kernels are tested
// one by one against float64 implementations written in the tests themselves.
import type { Gpu } from '../../src/engine/gpu.ts';
import { KernelCache, Recorder, StagingPool, UniformPool } from '../../src/engine/recorder.ts';

export class KernelHarness {
  private readonly kernels: KernelCache;
  private readonly pool: UniformPool;
  private readonly staging: StagingPool;

  constructor(private readonly gpu: Gpu) {
    this.kernels = new KernelCache(gpu.device);
    this.pool = new UniformPool(gpu.device);
    this.staging = new StagingPool(gpu.device);
  }

  pipeline(file: string, constants: Record<string, string | number | boolean> = {}): GPUComputePipeline {
    return this.kernels.get(file, constants);
  }

  /** A storage buffer holding `data` (f32 or u32 values), or `data` zero bytes. */
  buffer(data: ArrayLike<number> | Uint32Array | number, kind: 'f32' | 'u32' = 'f32'): GPUBuffer {
    const bytes = typeof data === 'number' ? data : data.length * 4;
    const buf = this.gpu.device.createBuffer({ size: Math.max(16, bytes), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    if (typeof data !== 'number') {
      const arr = data instanceof Uint32Array || kind === 'u32' ? Uint32Array.from(data) : Float32Array.from(data);
      this.gpu.device.queue.writeBuffer(buf, 0, arr);
    }
    return buf;
  }

  /** Records `body`, submits it, and returns `reads` as f32 arrays of `lengths` values. */
  async run(body: (rec: Recorder) => void, reads: [GPUBuffer, number][]): Promise<Float32Array[]> {
    const rec = new Recorder(this.gpu.device, this.kernels, this.pool, this.staging, 'kernel test');
    body(rec);
    for (const [buf, n] of reads) rec.read(buf, 0, n * 4);
    return (await rec.submit()).map((b) => new Float32Array(b));
  }
}

/** Deterministic values in [−scale, scale). */
export function wave(n: number, salt: number, scale = 1): Float64Array {
  return Float64Array.from({ length: n }, (_, i) => scale * Math.sin(salt * 12.9898 + i * 78.233 + (i * i) % 13));
}

/**
 * dL/dθ of L = Σ dy ⊙ f(θ) by central differences in float64: the float64 truth a kernel's backward
 * is checked against, without a hand-written float64 backward that could share its mistakes.
 */
export function numericGrad(f: (theta: Float64Array) => Float64Array, theta: Float64Array, dy: ArrayLike<number>, h = 1e-5): Float64Array {
  const g = new Float64Array(theta.length);
  const t = Float64Array.from(theta);
  for (let i = 0; i < t.length; i++) {
    const x0 = t[i]!;
    t[i] = x0 + h;
    const up = f(t);
    t[i] = x0 - h;
    const dn = f(t);
    t[i] = x0;
    let s = 0;
    for (let j = 0; j < up.length; j++) s += dy[j]! * (up[j]! - dn[j]!);
    g[i] = s / (2 * h);
  }
  return g;
}
