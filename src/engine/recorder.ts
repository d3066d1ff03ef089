// Kernel compilation cache and the command recorder: dispatches and copies are recorded in order,
// their uniform params packed into one arena, and everything goes to the GPU in ONE submit (round
// trips cost milliseconds in Chromium, specs/webgpu-without-a-gpu.md §6). Bind groups are created
// at submit time, once the arena's buffer exists. A recorder given a stop check is the exception: it
// submits layer by layer so that a long call (score, backward) can end at a layer boundary.

import { KERNEL_SOURCES } from './kernels/index.ts';

type BindingKind = 'uniform' | 'read-only-storage' | 'storage';

interface KernelPipeline {
  pipeline: GPUComputePipeline;
  file: string;
  constants: Record<string, string | number | boolean>;
  layout: GPUBindGroupLayout;
  /** Binding number and kind, ascending. */
  bindings: { binding: number; kind: BindingKind }[];
}

const BINDING_RE = /@group\(0\)\s*@binding\((\d+)\)\s*var<\s*(uniform|storage\s*,\s*read_write|storage\s*,\s*read|storage)\s*>/g;

/** Fills `{{NAME}}` placeholders; a placeholder without a value is an error that names it. */
export function fillTemplate(file: string, src: string, constants: Record<string, string | number | boolean>): string {
  return src.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    if (!(name in constants)) throw new Error(`kernel ${file}: no value given for placeholder {{${name}}}`);
    return String(constants[name]);
  });
}

/** One profiled dispatch: which kernel, the shape params it ran with (raw u32 words), and its GPU time. */
export interface DispatchTiming {
  file: string;
  constants: Record<string, string | number | boolean>;
  label: string;
  /** The recorder's label (the phase it belongs to, e.g. `train vision block 3 backward`). */
  recorder: string;
  params: Uint32Array;
  groups: [number, number, number];
  ms: number;
}

/**
 * Per-dispatch GPU timing, for benchmarks only (bench/engine/profile.ts); null on the KernelCache
 * otherwise, and then submit() is the plain one-submit path. 'timestamp': each dispatch in its own
 * compute pass with timestampWrites (the device must have `timestamp-query`), still one submit;
 * 'serial': each op submitted alone and awaited (queue.onSubmittedWorkDone), timed on the CPU.
 * Copies and clears are run but not timed.
 */
export interface Profiler {
  readonly method: 'timestamp' | 'serial';
  /** Called once per submit: its dispatches in order, and the GPU span from the first dispatch's start to the last one's end. */
  record(dispatches: DispatchTiming[], spanMs: number): void;
}

/** Timestamp queries per query set (WebGPU's limit is 4096): two per dispatch. */
const QUERIES_PER_SET = 4096;

export class KernelCache {
  /** Set only while a benchmark profiles dispatches (see Profiler). */
  profiler: Profiler | null = null;
  private readonly cache = new Map<string, KernelPipeline>();
  private readonly byPipeline = new Map<GPUComputePipeline, KernelPipeline>();

  constructor(private readonly device: GPUDevice) {}

  get(file: string, constants: Record<string, string | number | boolean> = {}): GPUComputePipeline {
    // Most kernels take no constants: their key is the file name, with no string built per dispatch.
    const key = Object.keys(constants).length === 0 ? file : `${file}|${JSON.stringify(Object.entries(constants).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
    const hit = this.cache.get(key);
    if (hit) return hit.pipeline;
    const raw = KERNEL_SOURCES[file];
    if (raw === undefined) {
      throw new Error(`kernel ${file} is not in src/engine/kernels/index.ts (run: npx tsx src/engine/kernels/build-index.ts)`);
    }
    const code = fillTemplate(file, raw, constants);
    const bindings: KernelPipeline['bindings'] = [];
    for (const m of code.matchAll(BINDING_RE)) {
      const kind: BindingKind = m[2] === 'uniform' ? 'uniform' : /read_write/.test(m[2]) ? 'storage' : 'read-only-storage';
      bindings.push({ binding: Number(m[1]), kind });
    }
    bindings.sort((a, b) => a.binding - b.binding);
    const layout = this.device.createBindGroupLayout({
      label: file,
      entries: bindings.map((b) => ({ binding: b.binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: b.kind } })),
    });
    const module = this.device.createShaderModule({ label: file, code });
    const pipeline = this.device.createComputePipeline({
      label: file,
      layout: this.device.createPipelineLayout({ label: file, bindGroupLayouts: [layout] }),
      compute: { module, entryPoint: 'main' },
    });
    const entry = { pipeline, file, constants, layout, bindings };
    this.cache.set(key, entry);
    this.byPipeline.set(pipeline, entry);
    return pipeline;
  }

  describe(pipeline: GPUComputePipeline): KernelPipeline {
    const e = this.byPipeline.get(pipeline);
    if (!e) throw new Error('recorder: pipeline was not created by this KernelCache');
    return e;
  }
}

/** A uniform value: a plain number is a u32, `f32(x)` a float, `i32(x)` a signed int. */
export type ParamValue = number | { f32: number } | { i32: number };
export const f32 = (v: number): ParamValue => ({ f32: v });
export const i32 = (v: number): ParamValue => ({ i32: v });

/** A buffer binding: a whole buffer or a byte range of one. */
export type Binding = GPUBuffer | { buffer: GPUBuffer; offset: number; size: number };

type Op =
  | { kind: 'boundary' }
  | { kind: 'dispatch'; pipeline: GPUComputePipeline; label: string; storage: Binding[]; uniformOffset: number; uniformSize: number; groups: [number, number, number] }
  | { kind: 'copy'; src: GPUBuffer; srcOffset: number; dst: GPUBuffer; dstOffset: number; size: number }
  | { kind: 'clear'; buffer: GPUBuffer; offset: number; size: number };

const UNIFORM_ALIGN = 256;

/** Largest workgroup count in one dimension; 1-D kernels index `gid.x + gid.y·65535·WG`. */
export const MAX_GROUPS = 65535;

/** Workgroup counts for n invocations of a 1-D kernel with workgroup size wg. */
export function groups1d(n: number, wg = 64): [number, number, number] {
  const total = Math.ceil(n / wg);
  if (total <= MAX_GROUPS) return [total, 1, 1];
  return [MAX_GROUPS, Math.ceil(total / MAX_GROUPS), 1];
}

/** An AbortError (DOM's name for it): what a call cut short by its stop check rejects with. */
export function abortError(): Error {
  const err = new Error('stopped');
  err.name = 'AbortError';
  return err;
}

export class Recorder {
  private readonly ops: Op[] = [];
  private arena = new ArrayBuffer(4096);
  private arenaUsed = 0;
  private readonly reads: { src: GPUBuffer; offset: number; size: number }[] = [];
  private submitted = false;

  constructor(
    private readonly device: GPUDevice,
    private readonly kernels: KernelCache,
    private readonly uniformPool: UniformPool,
    private readonly stagingPool: StagingPool,
    readonly label: string,
    /** Called right after the queue submit (before read-backs resolve). */
    private readonly onSubmitted?: () => void,
    /**
     * false: submit() opens no error scope of its own, so validation errors go to the scope the caller
     * holds open across many submits (a decode session: one scope per run, not one awaited per token).
     */
    private readonly errorScope = true,
    /**
     * Asked before each submit, at the start and at every boundary() (then once the GPU finished the
     * part before the one in flight): true = submit() submits nothing more, waits for the work in
     * flight and rejects with an AbortError. Without it boundaries are ignored and submit() is the
     * one-submit path.
     */
    private readonly stopped?: () => boolean,
  ) {}

  /** Number of compute dispatches recorded so far. */
  get dispatchCount(): number {
    return this.ops.filter((o) => o.kind === 'dispatch').length;
  }

  /**
   * Records one dispatch. `storage` fills the kernel's storage bindings in ascending binding order;
   * `params` (u32 / f32 / i32 scalars in struct order) fills its uniform binding. Empty grids are skipped.
   */
  dispatch(pipeline: GPUComputePipeline, storage: Binding[], params: ParamValue[] | null, groups: [number, number, number], label = ''): void {
    if (groups[0] === 0 || groups[1] === 0 || groups[2] === 0) return;
    const desc = this.kernels.describe(pipeline);
    const nStorage = desc.bindings.filter((b) => b.kind !== 'uniform').length;
    if (storage.length !== nStorage) {
      throw new Error(`recorder ${this.label}: kernel ${pipeline.label} ${label} takes ${nStorage} storage buffers, got ${storage.length}`);
    }
    let uniformOffset = -1;
    let uniformSize = 0;
    if (desc.bindings.some((b) => b.kind === 'uniform')) {
      if (!params) throw new Error(`recorder ${this.label}: kernel ${pipeline.label} needs params`);
      uniformSize = Math.max(16, Math.ceil((params.length * 4) / 16) * 16);
      uniformOffset = this.allocUniform(uniformSize);
      const view = new DataView(this.arena, uniformOffset, uniformSize);
      params.forEach((v, i) => {
        if (typeof v === 'number') view.setUint32(i * 4, v >>> 0, true);
        else if ('f32' in v) view.setFloat32(i * 4, v.f32, true);
        else view.setInt32(i * 4, v.i32, true);
      });
    }
    this.ops.push({ kind: 'dispatch', pipeline, label, storage, uniformOffset, uniformSize, groups });
  }

  copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, size: number): void {
    if (size > 0) this.ops.push({ kind: 'copy', src, srcOffset, dst, dstOffset, size });
  }

  clear(buffer: GPUBuffer, offset = 0, size = buffer.size - offset): void {
    if (size > 0) this.ops.push({ kind: 'clear', buffer, offset, size });
  }

  /**
   * A layer boundary: with a stop check, submit() sends the work before it as a submit of its own and
   * asks the check before the next one, once the part before it finished (one part stays queued
   * ahead, so the GPU does not wait on the check); without one, nothing. Profiled submits ignore
   * boundaries (benchmarks have no stop check).
   */
  boundary(): void {
    if (this.stopped) this.ops.push({ kind: 'boundary' });
  }

  /** Reads `size` bytes of `src` back after the submit; the result is submit()'s entry at the returned index. */
  read(src: GPUBuffer, offset: number, size: number): number {
    this.reads.push({ src, offset, size });
    return this.reads.length - 1;
  }

  /** Submits everything recorded (once) and resolves with the requested read-backs. */
  async submit(): Promise<ArrayBuffer[]> {
    if (this.submitted) throw new Error(`recorder ${this.label}: already submitted`);
    this.submitted = true;
    const profiler = this.kernels.profiler;
    if (this.errorScope) this.device.pushErrorScope('validation');
    const uniforms = this.arenaUsed > 0 ? this.uniformPool.take(this.arenaUsed) : null;
    if (uniforms) this.device.queue.writeBuffer(uniforms, 0, this.arena, 0, this.arenaUsed);
    const timing = profiler ? await this.submitProfiled(profiler, uniforms) : null;
    // All but the last part (there are parts only with a stop check). One part runs ahead of the one
    // awaited: the GPU always has the next layer queued while the check waits for the layer before, so
    // a stoppable call pays no idle gap per layer (a round trip is up to ~2 ms in Chromium), and a stop
    // lands within two layers of work.
    const parts = profiler ? [] : this.parts();
    const last = parts.pop() ?? [];
    let before: Promise<unknown> = Promise.resolve();
    for (const [i, part] of parts.entries()) {
      if (this.stopped?.()) return this.stopNow(uniforms);
      const enc = this.device.createCommandEncoder({ label: `${this.label} part ${i + 1}` });
      this.encodeOps(enc, part, uniforms);
      this.device.queue.submit([enc.finish()]);
      const done = this.device.queue.onSubmittedWorkDone();
      // Awaited next turn, or by stopNow's own wait: a lost device's rejection is never left unhandled.
      done.catch(() => undefined);
      await before;
      before = done;
    }
    if (!profiler && this.stopped?.()) return this.stopNow(uniforms);
    const enc = this.device.createCommandEncoder({ label: parts.length > 0 ? `${this.label} part ${parts.length + 1}` : this.label });
    this.encodeOps(enc, last, uniforms);
    const staging = this.reads.map((r) => {
      const size = Math.ceil(r.size / 4) * 4;
      const buf = this.stagingPool.take(size);
      enc.copyBufferToBuffer(r.src, r.offset, buf, 0, size);
      return buf;
    });
    this.device.queue.submit([enc.finish()]);
    if (uniforms) this.uniformPool.release(uniforms);
    this.onSubmitted?.();
    try {
      if (this.errorScope) {
        const error = await this.device.popErrorScope();
        if (error) throw new Error(`GPU validation error in ${this.label}: ${error.message}`);
      }
      if (timing) profiler!.record(...(await timing()));
      // Mapped together: the host waits for one reply, not one per read-back.
      await Promise.all(staging.map((b) => b.mapAsync(GPUMapMode.READ)));
      return staging.map((b, i) => b.getMappedRange().slice(0, this.reads[i]!.size));
    } finally {
      for (const b of staging) {
        if (b.mapState === 'mapped') b.unmap();
        // A map still pending (another one failed) makes the buffer unusable for the next submit.
        if (b.mapState === 'unmapped') this.stagingPool.release(b);
        else b.destroy();
      }
    }
  }

  /** The ops split at their boundaries (one part when there are none). */
  private parts(): Op[][] {
    const parts: Op[][] = [[]];
    for (const op of this.ops) {
      if (op.kind === 'boundary') parts.push([]);
      else parts[parts.length - 1]!.push(op);
    }
    return parts;
  }

  /**
   * The stop check said stop: nothing more is submitted. Waits for the work in flight, so the buffers
   * the call used are idle and the engine's next call may reuse them, then rejects with an AbortError
   * (or with the validation error of the work that did run: a bug is not hidden by a stop).
   */
  private async stopNow(uniforms: GPUBuffer | null): Promise<never> {
    await this.device.queue.onSubmittedWorkDone();
    if (uniforms) this.uniformPool.release(uniforms);
    if (this.errorScope) {
      const error = await this.device.popErrorScope();
      if (error) throw new Error(`GPU validation error in ${this.label}: ${error.message}`);
    }
    throw abortError();
  }

  /** Encodes ops in order, consecutive dispatches sharing one compute pass (or each its own, timed, when `timestamps` is given). */
  private encodeOps(enc: GPUCommandEncoder, ops: readonly Op[], uniforms: GPUBuffer | null, timestamps?: (i: number) => GPUComputePassTimestampWrites): void {
    let pass: GPUComputePassEncoder | null = null;
    const endPass = () => {
      pass?.end();
      pass = null;
    };
    let d = 0;
    for (const op of ops) {
      if (op.kind === 'dispatch') {
        const desc = this.kernels.describe(op.pipeline);
        let s = 0;
        const entries: GPUBindGroupEntry[] = desc.bindings.map((b) => {
          if (b.kind === 'uniform') return { binding: b.binding, resource: { buffer: uniforms!, offset: op.uniformOffset, size: op.uniformSize } };
          const bind = op.storage[s++];
          return { binding: b.binding, resource: 'buffer' in bind ? { buffer: bind.buffer, offset: bind.offset, size: bind.size } : { buffer: bind } };
        });
        const group = this.device.createBindGroup({ label: op.label || op.pipeline.label, layout: desc.layout, entries });
        if (timestamps) endPass();
        pass ??= enc.beginComputePass({ label: this.label, ...(timestamps ? { timestampWrites: timestamps(d) } : {}) });
        pass.setPipeline(op.pipeline);
        pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(op.groups[0], op.groups[1], op.groups[2]);
        d++;
      } else if (op.kind === 'copy') {
        endPass();
        enc.copyBufferToBuffer(op.src, op.srcOffset, op.dst, op.dstOffset, op.size);
      } else if (op.kind === 'clear') {
        endPass();
        enc.clearBuffer(op.buffer, op.offset, op.size);
      }
    }
    endPass();
  }

  /**
   * Runs every op with per-dispatch timing (Profiler); resolves to a function that reads the timings
   * back once the submit is done. Read-backs are left to submit().
   */
  private async submitProfiled(profiler: Profiler, uniforms: GPUBuffer | null): Promise<() => Promise<[DispatchTiming[], number]>> {
    const dispatches = this.ops.filter((o) => o.kind === 'dispatch');
    const timings: DispatchTiming[] = dispatches.map((op) => {
      const desc = this.kernels.describe(op.pipeline);
      const params = op.uniformOffset >= 0 ? new Uint32Array(this.arena.slice(op.uniformOffset, op.uniformOffset + op.uniformSize)) : new Uint32Array(0);
      return { file: desc.file, constants: desc.constants, label: op.label, recorder: this.label, params, groups: op.groups, ms: 0 };
    });
    if (timings.length === 0) {
      const enc = this.device.createCommandEncoder({ label: this.label });
      this.encodeOps(enc, this.ops, uniforms);
      this.device.queue.submit([enc.finish()]);
      return async () => [timings, 0];
    }
    if (profiler.method === 'serial') {
      let first = 0;
      let d = 0;
      for (const op of this.ops) {
        const enc = this.device.createCommandEncoder({ label: `${this.label} profiled` });
        this.encodeOps(enc, [op], uniforms);
        const t0 = performance.now();
        if (d === 0 && op.kind === 'dispatch') first = t0;
        this.device.queue.submit([enc.finish()]);
        await this.device.queue.onSubmittedWorkDone();
        if (op.kind === 'dispatch') timings[d++]!.ms = performance.now() - t0;
      }
      const span = performance.now() - first;
      return async () => [timings, span];
    }
    const sets = Array.from({ length: Math.ceil((2 * dispatches.length) / QUERIES_PER_SET) }, () =>
      this.device.createQuerySet({ label: `${this.label} timestamps`, type: 'timestamp', count: QUERIES_PER_SET }));
    const perSet = QUERIES_PER_SET / 2;
    const enc = this.device.createCommandEncoder({ label: `${this.label} profiled` });
    this.encodeOps(enc, this.ops, uniforms, (i) => ({
      querySet: sets[Math.floor(i / perSet)]!, beginningOfPassWriteIndex: 2 * (i % perSet), endOfPassWriteIndex: 2 * (i % perSet) + 1,
    }));
    const resolved = this.device.createBuffer({ label: 'timestamps', size: sets.length * QUERIES_PER_SET * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
    const staging = this.device.createBuffer({ label: 'timestamps readback', size: resolved.size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    sets.forEach((set, k) => enc.resolveQuerySet(set, 0, QUERIES_PER_SET, resolved, k * QUERIES_PER_SET * 8));
    enc.copyBufferToBuffer(resolved, 0, staging, 0, resolved.size);
    this.device.queue.submit([enc.finish()]);
    return async () => {
      await staging.mapAsync(GPUMapMode.READ);
      const ns = new BigUint64Array(staging.getMappedRange().slice(0));
      staging.destroy();
      resolved.destroy();
      sets.forEach((q) => q.destroy());
      const at = (i: number, end: number) => ns[Math.floor(i / perSet) * QUERIES_PER_SET + 2 * (i % perSet) + end]!;
      timings.forEach((t, i) => (t.ms = Number(at(i, 1) - at(i, 0)) / 1e6));
      const span = timings.length ? Number(at(timings.length - 1, 1) - at(0, 0)) / 1e6 : 0;
      return [timings, span];
    };
  }

  private allocUniform(size: number): number {
    const offset = Math.ceil(this.arenaUsed / UNIFORM_ALIGN) * UNIFORM_ALIGN;
    const need = offset + size;
    if (need > this.arena.byteLength) {
      const grown = new ArrayBuffer(Math.max(need, this.arena.byteLength * 2));
      new Uint8Array(grown).set(new Uint8Array(this.arena));
      this.arena = grown;
    }
    this.arenaUsed = need;
    return offset;
  }
}

/**
 * Uniform arenas reused across submits. Reuse is safe because queue.writeBuffer is ordered after
 * every earlier submit on the same queue.
 */
export class UniformPool {
  private buffer: GPUBuffer | null = null;

  take(size: number): GPUBuffer {
    const buf = this.buffer;
    this.buffer = null;
    if (buf && buf.size >= size) return buf;
    buf?.destroy();
    return this.create(size);
  }

  release(buf: GPUBuffer): void {
    if (this.buffer) this.buffer.destroy();
    this.buffer = buf;
  }

  constructor(private readonly device: GPUDevice) {}

  private create(size: number): GPUBuffer {
    const bytes = Math.max(65536, 2 ** Math.ceil(Math.log2(size)));
    return this.device.createBuffer({ label: 'uniform arena', size: bytes, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  }
}

/**
 * Read-back (MAP_READ) buffers reused across submits, so a decode loop creates none per step. A
 * buffer is taken for one submit and given back once its contents were copied out; only buffers up to
 * KEEP_BYTES are kept (a large one-off read-back, e.g. every gradient, is destroyed after use), and at
 * most KEEP_COUNT of them, so the pool stays small whatever is read.
 */
export class StagingPool {
  private static readonly KEEP_BYTES = 1 << 20;
  private static readonly KEEP_COUNT = 16;
  private free: GPUBuffer[] = [];

  constructor(private readonly device: GPUDevice) {}

  take(size: number): GPUBuffer {
    // The smallest free buffer that is large enough.
    let best = -1;
    this.free.forEach((b, i) => {
      if (b.size >= size && (best < 0 || b.size < this.free[best]!.size)) best = i;
    });
    if (best >= 0) return this.free.splice(best, 1)[0]!;
    const bytes = size <= StagingPool.KEEP_BYTES ? Math.max(256, 2 ** Math.ceil(Math.log2(size))) : size;
    return this.device.createBuffer({ label: 'readback', size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  }

  release(buf: GPUBuffer): void {
    if (buf.size > StagingPool.KEEP_BYTES || this.free.length >= StagingPool.KEEP_COUNT) buf.destroy();
    else this.free.push(buf);
  }

  destroy(): void {
    for (const b of this.free) b.destroy();
    this.free = [];
  }
}
