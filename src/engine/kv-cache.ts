// The KV cache: per layer one K and one V buffer of rows (K·d values each, f32, or f16 where the
// adapter has shader-f16 and the memory plan chose it: kv_write rounds, attention reads into f32). Every sequence owns one
// contiguous region of rows; attention reads its keys at region.start + position. Regions are
// handed out first-fit; a sequence that outgrows its region moves (2·L buffer copies), and when no
// gap is large enough every buffer grows (doubling) with its contents copied.
// Only attention layers have a cache (Qwen3.5's linear-attention layers keep a state instead,
// linear-state.ts): their entries are a shared 16-byte placeholder, as memory-plan.ts counts.

import type { KvTarget } from './internals.ts';
import type { GpuDtype } from './memory-plan.ts';

interface Region {
  start: number;
  capacity: number;
}

/** Rows are handed out in multiples of this (fewer, larger regions). */
const REGION_GRANULARITY = 16;

export class KvCache implements KvTarget {
  k: GPUBuffer[] = [];
  v: GPUBuffer[] = [];
  private capacityRows = 0;
  private readonly regions = new Map<number, Region>();
  private placeholder: GPUBuffer | null = null;

  constructor(
    private readonly device: GPUDevice,
    /** Per layer: whether it attends over a KV cache. */
    private readonly attends: readonly boolean[],
    /** K·d floats per row. */
    private readonly rowWidth: number,
    /** Largest buffer in bytes (the binding limit). */
    private readonly maxBytes: number,
    /** Element type of the rows (memory-plan.ts chooseKvDtype). */
    readonly dtype: GpuDtype = 'f32',
  ) {}

  get rowBytes(): number {
    return this.rowWidth * (this.dtype === 'f16' ? 2 : 4);
  }

  get capacity(): number {
    return this.capacityRows;
  }

  /** First row of the sequence's region (it must have one). */
  base(seqId: number): number {
    const r = this.regions.get(seqId);
    if (!r) throw new Error(`KV cache: sequence ${seqId} has no cache region`);
    return r.start;
  }

  /**
   * Makes sure sequence `seqId` has room for `rows` rows, keeping its first `keepRows` rows
   * (already cached tokens) when it has to move.
   */
  reserve(seqId: number, rows: number, keepRows: number): void {
    const have = this.regions.get(seqId);
    if (have && have.capacity >= rows) return;
    const want = Math.ceil(Math.max(rows, (have?.capacity ?? 0) * 2) / REGION_GRANULARITY) * REGION_GRANULARITY;
    if (have) {
      // Grow in place when the rows after the region are free.
      const end = have.start + want;
      if (end <= this.capacityRows && this.isFree(have.start + have.capacity, end, seqId)) {
        have.capacity = want;
        return;
      }
    }
    let start = this.findGap(want, seqId);
    if (start < 0) {
      this.grow(this.usedRows(seqId) + want);
      start = this.findGap(want, seqId);
      if (start < 0) throw new Error('KV cache: internal error, no gap after growing');
    }
    if (have && keepRows > 0) this.moveRows(have.start, start, keepRows);
    this.regions.set(seqId, { start, capacity: want });
  }

  release(seqId: number): void {
    this.regions.delete(seqId);
  }

  private cachedLayers(): number[] {
    return this.attends.flatMap((a, l) => (a ? [l] : []));
  }

  destroy(): void {
    for (const b of new Set([...this.k, ...this.v])) b.destroy();
    this.placeholder = null;
    this.k = [];
    this.v = [];
    this.regions.clear();
    this.capacityRows = 0;
  }

  private usedRows(except: number): number {
    let n = 0;
    for (const [id, r] of this.regions) if (id !== except) n += r.capacity;
    return n;
  }

  private sortedOthers(except: number): Region[] {
    return [...this.regions].filter(([id]) => id !== except).map(([, r]) => r).sort((a, b) => a.start - b.start);
  }

  private isFree(from: number, to: number, except: number): boolean {
    return this.sortedOthers(except).every((r) => r.start >= to || r.start + r.capacity <= from);
  }

  private findGap(rows: number, except: number): number {
    let cursor = 0;
    for (const r of this.sortedOthers(except)) {
      if (r.start - cursor >= rows) return cursor;
      cursor = Math.max(cursor, r.start + r.capacity);
    }
    return this.capacityRows - cursor >= rows ? cursor : -1;
  }

  private grow(minRows: number): void {
    const maxRows = Math.floor(this.maxBytes / this.rowBytes);
    let rows = Math.max(minRows, this.capacityRows * 2, 64);
    rows = Math.min(rows, maxRows);
    if (rows < minRows) {
      throw new Error(`KV cache: ${minRows} rows × ${this.rowBytes} bytes exceed the largest GPU buffer (${this.maxBytes} bytes); release sequences or shorten them`);
    }
    this.placeholder ??= this.device.createBuffer({ label: 'kv cache placeholder', size: 16, usage: GPUBufferUsage.STORAGE });
    const make = (kind: string, l: number) => (this.attends[l] ? this.device.createBuffer({
      label: `kv cache ${kind} layer ${l}`,
      size: rows * this.rowBytes,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    }) : this.placeholder!);
    const k = this.attends.map((_, l) => make('k', l));
    const v = this.attends.map((_, l) => make('v', l));
    if (this.capacityRows > 0) {
      const enc = this.device.createCommandEncoder({ label: 'kv cache grow' });
      for (const l of this.cachedLayers()) {
        enc.copyBufferToBuffer(this.k[l]!, 0, k[l]!, 0, this.capacityRows * this.rowBytes);
        enc.copyBufferToBuffer(this.v[l]!, 0, v[l]!, 0, this.capacityRows * this.rowBytes);
      }
      this.device.queue.submit([enc.finish()]);
      for (const l of this.cachedLayers()) {
        this.k[l]!.destroy();
        this.v[l]!.destroy();
      }
    }
    this.k = k;
    this.v = v;
    this.capacityRows = rows;
  }

  /** Copies rows between regions of the same buffers (via a temporary: source and target may not overlap in one copy). */
  private moveRows(from: number, to: number, rows: number): void {
    const bytes = rows * this.rowBytes;
    const tmp = this.device.createBuffer({ label: 'kv cache move', size: bytes, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    const enc = this.device.createCommandEncoder({ label: 'kv cache move' });
    for (const bufs of [this.k, this.v]) {
      for (const b of this.cachedLayers().map((l) => bufs[l]!)) {
        enc.copyBufferToBuffer(b, from * this.rowBytes, tmp, 0, bytes);
        enc.copyBufferToBuffer(tmp, 0, b, to * this.rowBytes, bytes);
      }
    }
    this.device.queue.submit([enc.finish()]);
    tmp.destroy();
  }
}
