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

/** Floats of the backward's `work` buffer (checkpoints, then the replay scratch at scratchOffset). */
export function deltaBackwardWork(lengths: readonly number[], hv: number, dk: number, dv: number, chunk = DELTA_CHUNK): { floats: number; scratchOffset: number } {
  const checkpoints = lengths.reduce((a, n) => a + Math.ceil(n / chunk), 0);
  const scratchOffset = checkpoints * hv * dk * dv;
  return { floats: scratchOffset + lengths.length * hv * chunk * dk * dv, scratchOffset };
}

/**
 * Rows of i the backward reduces per round: the largest power of two that divides dk, is ≤ dv (the
 * first TILE invocations sum them) and fits two (TILE, dv) f32 tiles plus the (dv) vec2 row in
 * `workgroupBytes` of workgroup memory.
 */
export function deltaBackwardTile(dk: number, dv: number, workgroupBytes: number): number {
  if (dv > 256) throw new Error(`gated delta backward: linear_value_head_dim ${dv} > 256 (one invocation per value column)`);
  let tile = 1;
  while (dk % (tile * 2) === 0 && tile * 2 <= dv && (2 * tile * 2 * dv + 2 * dv) * 4 <= workgroupBytes) tile *= 2;
  return tile;
}
