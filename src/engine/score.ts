// Teacher-forced scoring: per-token log-probs (and entropies) of given sequences at a temperature.
// Sequences are packed into passes of at most SCORE_TOKENS_PER_PASS tokens (a longer sequence gets
// a pass of its own); only the rows that predict a scored token reach the LM head, whose vocabulary
// is streamed in chunks. With a stop check (ScoreRequest.stopped) a pass goes to the GPU layer by
// layer and may end at any layer boundary.

import type { Qwen3Forward } from './forward.ts';
import type { ScoreOutput, ScoreRequest } from './types.ts';
import { checkImageInputs, encodeImages, packPrompts } from './vision/prompts.ts';

const SCORE_TOKENS_PER_PASS = 2048;

export function checkScoreRequest(req: ScoreRequest, vocabSize: number): void {
  if (!(Number.isFinite(req.temperature) && req.temperature > 0)) throw new Error(`score: temperature must be > 0, got ${req.temperature}`);
  req.sequences.forEach((s, i) => {
    if (s.ids.length === 0) throw new Error(`score: sequence ${i} is empty`);
    if (!Number.isInteger(s.scoreFrom) || s.scoreFrom < 1 || s.scoreFrom > s.ids.length) {
      throw new Error(`score: sequence ${i} scoreFrom must be in [1, ${s.ids.length}] (position 0 has no prediction), got ${s.scoreFrom}`);
    }
    for (const t of s.ids) {
      if (!Number.isInteger(t) || t < 0 || t >= vocabSize) throw new Error(`score: sequence ${i} has token ${t}, outside the vocabulary [0, ${vocabSize})`);
    }
  });
}

/** Groups sequence indices into passes of at most `budget` tokens (in order). */
export function planPasses(lengths: number[], budget: number): number[][] {
  const passes: number[][] = [];
  let cur: number[] = [];
  let used = 0;
  lengths.forEach((n, i) => {
    if (cur.length && used + n > budget) {
      passes.push(cur);
      cur = [];
      used = 0;
    }
    cur.push(i);
    used += n;
  });
  if (cur.length) passes.push(cur);
  return passes;
}

export async function scoreSequences(fwd: Qwen3Forward, req: ScoreRequest): Promise<ScoreOutput> {
  checkScoreRequest(req, fwd.config.vocabSize);
  checkImageInputs(fwd, req.sequences, 'score');
  const adapters = req.adapters ?? true;
  const out: ScoreOutput = {
    logprobs: req.sequences.map((s) => new Float32Array(s.ids.length - s.scoreFrom)),
    entropy: req.sequences.map((s) => new Float32Array(s.ids.length - s.scoreFrom)),
  };
  for (const pass of planPasses(req.sequences.map((s) => s.ids.length), SCORE_TOKENS_PER_PASS)) {
    const seqs = pass.map((i) => req.sequences[i]!);
    // Row r predicts token ids[t] from position t − 1.
    const rows: number[] = [];
    const targets: number[] = [];
    let start = 0;
    for (const s of seqs) {
      for (let t = s.scoreFrom; t < s.ids.length; t++) {
        rows.push(start + t - 1);
        targets.push(s.ids[t]!);
      }
      start += s.ids.length;
    }
    if (rows.length === 0) continue;
    const R = rows.length;
    const batch = packPrompts(fwd, seqs, (role, bytes) => fwd.scratchBuffer(`score.${role}`, bytes));
    const acts = fwd.scratchLayerActs(batch.T, 'score');
    const rec = fwd.recorder('score', { stopped: req.stopped });
    const hidden = fwd.encodeTrunk(rec, batch, acts, { adapters }, encodeImages(fwd, rec, seqs, adapters));
    const rowIndex = fwd.scratchBuffer('score.rowIndex', R * 4);
    const targetBuf = fwd.scratchBuffer('score.targets', R * 4);
    fwd.device.queue.writeBuffer(rowIndex, 0, Uint32Array.from(rows));
    fwd.device.queue.writeBuffer(targetBuf, 0, Uint32Array.from(targets));
    const h = fwd.encodeFinalHidden(rec, hidden, rowIndex, R);
    const result = fwd.encodeLogprobs(rec, h, R, targetBuf, req.temperature); // (R, 3)
    const read = rec.read(result, 0, R * 12);
    const values = new Float32Array((await rec.submit())[read]!);
    let r = 0;
    for (const i of pass) {
      const n = req.sequences[i]!.ids.length - req.sequences[i]!.scoreFrom;
      for (let j = 0; j < n; j++, r++) {
        out.logprobs[i]![j] = values[r * 3]!;
        out.entropy[i]![j] = values[r * 3 + 1]!;
      }
    }
  }
  return out;
}
