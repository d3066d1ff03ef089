// Qwen3.5's Gated DeltaNet layers keep, per generating sequence, a fixed-size state in the KV
// cache's place: the last K−1 conv inputs (C channels) and the recurrent state S (Hv, dk, dv).
// This pool gives every sequence one slot of per-layer buffers (slots, …); a slot is zeroed when a
// sequence gets it (a new sequence starts from S₀ = 0) and returns to the free list on release.
// A decode session reserves its rows' slots and snapshot rows when it opens (so its steps create no
// buffers, and the memory plan's count — both, per sequence — is what is allocated); past that the
// slots grow (doubling, contents copied) when more sequences hold state at once.
//
// A recurrent state cannot be truncated like a KV cache: it has absorbed every token fed. A chain of
// decode steps may feed tokens past a sequence's stop, so the session snapshots the rows' slots
// before such a chain (snapshot) and, for a row that stopped early, copies the snapshot back
// (restore) and re-feeds its tokens since (generate.ts). The engine has no fork: a prompt shared by a
// group is prefilled into each sequence's own slot.

import type { LinearStateTarget } from './internals.ts';
import type { ModelConfig } from '../model/types.ts';

export class LinearStatePool implements LinearStateTarget {
  /** Per layer (unused for full-attention layers: a 16-byte placeholder). */
  conv: GPUBuffer[] = [];
  recurrent: GPUBuffer[] = [];
  private readonly convSlotBytes: number;
  private readonly recurrentSlotBytes: number;
  private readonly linearLayers: number[];
  private capacitySlots = 0;
  private readonly slots = new Map<number, number>();
  private free: number[] = [];
  /** Snapshot buffers per linear layer, (snapshotRows, …), grown on demand. */
  private snapConv: GPUBuffer[] = [];
  private snapRecurrent: GPUBuffer[] = [];
  private snapRows = 0;

  constructor(
    private readonly device: GPUDevice,
    config: ModelConfig,
    /** Largest bytes of one buffer (the binding limit). */
    private readonly maxBytes: number,
  ) {
    const la = config.linearAttention;
    if (!la) throw new Error('linear-attention state: the model has no linear-attention layers');
    const C = 2 * la.numKeyHeads * la.keyHeadDim + la.numValueHeads * la.valueHeadDim;
    this.convSlotBytes = C * (la.convKernelDim - 1) * 4;
    this.recurrentSlotBytes = la.numValueHeads * la.keyHeadDim * la.valueHeadDim * 4;
    this.linearLayers = config.layerTypes.flatMap((t, l) => (t === 'linear_attention' ? [l] : []));
    const placeholder = device.createBuffer({ label: 'linear state placeholder', size: 16, usage: GPUBufferUsage.STORAGE });
    this.conv = config.layerTypes.map(() => placeholder);
    this.recurrent = config.layerTypes.map(() => placeholder);
  }

  /** Bytes one sequence's state takes over every linear-attention layer (memory-plan.ts counts the same). */
  get bytesPerSequence(): number {
    return this.linearLayers.length * (this.convSlotBytes + this.recurrentSlotBytes);
  }

  /** At least `rows` slots and `rows` snapshot rows (a decode session of at most `rows` rows). */
  reserve(rows: number): void {
    if (rows > this.capacitySlots) this.grow(rows);
    this.ensureSnapshotRows(rows);
  }

  /** The sequence's slot; a sequence without one gets a free slot, zeroed. */
  slot(seqId: number): number {
    const have = this.slots.get(seqId);
    if (have !== undefined) return have;
    if (this.free.length === 0) this.grow(Math.max(1, this.capacitySlots * 2));
    const slot = this.free.pop()!;
    this.slots.set(seqId, slot);
    const enc = this.device.createCommandEncoder({ label: 'linear state reset' });
    for (const l of this.linearLayers) {
      enc.clearBuffer(this.conv[l]!, slot * this.convSlotBytes, this.convSlotBytes);
      enc.clearBuffer(this.recurrent[l]!, slot * this.recurrentSlotBytes, this.recurrentSlotBytes);
    }
    this.device.queue.submit([enc.finish()]);
    return slot;
  }

  release(seqId: number): void {
    const slot = this.slots.get(seqId);
    if (slot === undefined) return;
    this.slots.delete(seqId);
    this.free.push(slot);
  }

  /** Records copies of the given sequences' states into snapshot rows 0..n−1 (in order). */
  snapshot(enc: GPUCommandEncoder, seqIds: readonly number[]): void {
    this.ensureSnapshotRows(seqIds.length);
    this.copySlots(enc, seqIds, true);
  }

  /** Records copies of snapshot row r back into the slot of seqIds[r], for the rows given. */
  restore(enc: GPUCommandEncoder, seqIds: readonly number[], rows: readonly number[]): void {
    this.copySlots(enc, rows.map((r) => seqIds[r]!), false, rows);
  }

  destroy(): void {
    for (const b of new Set([...this.conv, ...this.recurrent, ...this.snapConv, ...this.snapRecurrent])) b.destroy();
    this.slots.clear();
    this.free = [];
    this.capacitySlots = 0;
  }

  private copySlots(enc: GPUCommandEncoder, seqIds: readonly number[], toSnapshot: boolean, rows?: readonly number[]): void {
    this.linearLayers.forEach((l, i) => {
      for (const [live, snap, bytes] of [[this.conv[l]!, this.snapConv[i]!, this.convSlotBytes], [this.recurrent[l]!, this.snapRecurrent[i]!, this.recurrentSlotBytes]] as const) {
        seqIds.forEach((id, k) => {
          const slotOffset = this.slot(id) * bytes;
          const snapOffset = (rows ? rows[k]! : k) * bytes;
          if (toSnapshot) enc.copyBufferToBuffer(live, slotOffset, snap, snapOffset, bytes);
          else enc.copyBufferToBuffer(snap, snapOffset, live, slotOffset, bytes);
        });
      }
    });
  }

  private make(label: string, slots: number, slotBytes: number): GPUBuffer {
    const size = slots * slotBytes;
    if (size > this.maxBytes) {
      throw new Error(`linear-attention state: ${slots} sequences × ${slotBytes} bytes per layer exceed the largest GPU buffer (${this.maxBytes} bytes); generate fewer sequences at once`);
    }
    return this.device.createBuffer({ label, size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  }

  private grow(slots: number): void {
    const conv = this.linearLayers.map((l) => this.make(`conv state layer ${l}`, slots, this.convSlotBytes));
    const recurrent = this.linearLayers.map((l) => this.make(`recurrent state layer ${l}`, slots, this.recurrentSlotBytes));
    const enc = this.device.createCommandEncoder({ label: 'linear state grow' });
    this.linearLayers.forEach((l, i) => {
      if (this.capacitySlots > 0) {
        enc.copyBufferToBuffer(this.conv[l]!, 0, conv[i]!, 0, this.capacitySlots * this.convSlotBytes);
        enc.copyBufferToBuffer(this.recurrent[l]!, 0, recurrent[i]!, 0, this.capacitySlots * this.recurrentSlotBytes);
      }
    });
    this.device.queue.submit([enc.finish()]);
    this.linearLayers.forEach((l, i) => {
      if (this.capacitySlots > 0) {
        this.conv[l]!.destroy();
        this.recurrent[l]!.destroy();
      }
      this.conv[l] = conv[i]!;
      this.recurrent[l] = recurrent[i]!;
    });
    for (let s = slots - 1; s >= this.capacitySlots; s--) this.free.push(s);
    this.capacitySlots = slots;
  }

  private ensureSnapshotRows(rows: number): void {
    if (rows <= this.snapRows) return;
    for (const b of [...this.snapConv, ...this.snapRecurrent]) b.destroy();
    this.snapConv = this.linearLayers.map((l) => this.make(`conv state snapshot layer ${l}`, rows, this.convSlotBytes));
    this.snapRecurrent = this.linearLayers.map((l) => this.make(`recurrent state snapshot layer ${l}`, rows, this.recurrentSlotBytes));
    this.snapRows = rows;
  }
}
