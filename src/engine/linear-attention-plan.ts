// Host-side layout of the Gated DeltaNet kernels (kernels/gated_delta*.wgsl, conv1d_silu*.wgsl):
// the per-sequence table they read, the backward's checkpoint + replay buffer, and its reduction tile.

/** Tokens between two saved states in the delta rule's backward (see gated_delta_backward.wgsl). */
export const DELTA_CHUNK = 16;

/**
 * (sequences, 4) u32: first row in the pack, rows, state slot, index of its first backward checkpoint.
 * `slots` defaults to the sequence's index (scoring: no saved state).
 */
export function sequenceTable(starts: readonly number[], lengths: readonly number[], slots?: readonly number[], chunk = DELTA_CHUNK): Uint32Array<ArrayBuffer> {
  const table = new Uint32Array(starts.length * 4);
  let checkpoints = 0;
  starts.forEach((first, s) => {
    table.set([first, lengths[s]!, slots ? slots[s]! : s, checkpoints], s * 4);
    checkpoints += Math.ceil(lengths[s]! / chunk);
  });
  return table;
}

/**
 * Floats of the backward's `work` buffer: the state at the start of every chunk of every sequence,
 * then at scratchOffset one scratch per (sequence, value head) for the chunk being differentiated
 * (dS (dk, dv), then δ, db, dw and three gate partials, (chunk, dv) each; see gated_delta_backward.wgsl).
 */
export function deltaBackwardWork(lengths: readonly number[], hv: number, dk: number, dv: number, chunk = DELTA_CHUNK): { floats: number; scratchOffset: number } {
  const checkpoints = lengths.reduce((a, n) => a + Math.ceil(n / chunk), 0);
  const scratchOffset = checkpoints * hv * dk * dv;
  return { floats: scratchOffset + lengths.length * hv * (dk * dv + 6 * chunk * dv), scratchOffset };
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
