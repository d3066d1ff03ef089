// Host-side layout of the Gated DeltaNet kernels (kernels/gated_delta*.wgsl, conv1d_silu*.wgsl):
// the per-sequence table they read, the backward's checkpoint + replay buffer, and its reduction tile.

/** Tokens between two saved states in the delta rule's backward (see gated_delta_backward.wgsl). */
export const DELTA_CHUNK = 16;

/** States the backward keeps for a sequence of `n` tokens: one per segment of `seg` chunks, and those of one segment's other chunks. */
function checkpointsOf(n: number, chunk: number, seg: number): number {
  const chunks = Math.ceil(n / chunk);
  return Math.ceil(chunks / seg) + Math.min(seg, chunks) - 1;
}

/**
 * Chunks per saved segment state of the delta rule's backward for a pack of `lengths`: the one that keeps
 * the fewest states for its longest sequence, ⌈chunks/seg⌉ + seg (≈ 2√chunks at seg ≈ √chunks, against one
 * state per chunk), ties to the smaller (less replay). A function of the lengths alone, so the memory plan,
 * the pack's table and the kernel agree.
 */
export function deltaSegment(lengths: readonly number[], chunk = DELTA_CHUNK): number {
  const chunks = Math.ceil(Math.max(1, ...lengths) / chunk);
  let best = 1;
  for (let seg = 2; seg <= chunks; seg++) if (checkpointsOf(chunks * chunk, chunk, seg) < checkpointsOf(chunks * chunk, chunk, best)) best = seg;
  return best;
}

/**
 * (sequences, 4) u32: first row in the pack, rows, state slot, index of its first backward checkpoint.
 * `slots` defaults to the sequence's index (scoring: no saved state).
 */
export function sequenceTable(starts: readonly number[], lengths: readonly number[], slots?: readonly number[], chunk = DELTA_CHUNK): Uint32Array<ArrayBuffer> {
  const table = new Uint32Array(starts.length * 4);
  const seg = deltaSegment(lengths, chunk);
  let checkpoints = 0;
  starts.forEach((first, s) => {
    table.set([first, lengths[s]!, slots ? slots[s]! : s, checkpoints], s * 4);
    checkpoints += checkpointsOf(lengths[s]!, chunk, seg);
  });
  return table;
}

/**
 * Floats of the backward's `work` buffer: the saved states of every sequence (one per segment of `seg`
 * chunks, then one segment's chunk states), then at scratchOffset one scratch per (sequence, value head)
 * for the chunk being differentiated (dS (dk, dv), then δ, db, dw and three gate partials, (chunk, dv)
 * each; see gated_delta_backward.wgsl).
 */
export function deltaBackwardWork(lengths: readonly number[], hv: number, dk: number, dv: number, chunk = DELTA_CHUNK): { floats: number; scratchOffset: number; seg: number } {
  const seg = deltaSegment(lengths, chunk);
  const checkpoints = lengths.reduce((a, n) => a + checkpointsOf(n, chunk, seg), 0);
  const scratchOffset = checkpoints * hv * dk * dv;
  return { floats: scratchOffset + lengths.length * hv * (dk * dv + 6 * chunk * dv), scratchOffset, seg };
}

/**
 * Invocations per workgroup of the backward: one per state column (dv) and one per state row (dk),
 * so max(dk, dv); it must fit the adapter's workgroup.
 */
export function deltaBackwardThreads(dk: number, dv: number, maxInvocations: number): number {
  const n = Math.max(dk, dv);
  if (n > maxInvocations) throw new Error(`gated delta backward: max(linear_key_head_dim ${dk}, linear_value_head_dim ${dv}) = ${n} > ${maxInvocations} invocations per workgroup on this adapter`);
  return n;
}
