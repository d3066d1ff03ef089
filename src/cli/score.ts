// `webgrpo score --model DIR --ids 1,2,3 [--adapter DIR | --checkpoint DIR] [--temperature T] [--score-from N] [--grads OUT.safetensors]`:
// per-token log-probs and entropies of the given ids (position t scored from positions < t) as
// JSON, with a trained adapter or checkpoint on the model if given. `--image FILE.png --text TEXT`
// (a Qwen3.5 vision-language model) scores one user message, the image then the text, rendered by
// the model's chat template with the processor's image tokens instead of --ids. With --grads, the
// full-fine-tuning gradients of the MEAN token log-prob under the checkpoint's own tensor names,
// written as F32 safetensors.

import { writeFile } from 'node:fs/promises';
import { openCheckpoint } from '../model/checkpoint.ts';
import { encodeFromFloat32, writeSafetensors } from '../model/safetensors.ts';
import { intOption, numOption, parseCli, str } from './args.ts';
import { loadTrainedEngine, MODEL_HELP, MODEL_OPTIONS, modelArgs } from './model-args.ts';
import { imageScoreInput } from './image-prompt.ts';
import { ADAPTER_HELP, announceAdapter } from './adapter-line.ts';
import type { ScoreSequence } from '../engine/types.ts';

const HELP = `usage: webgrpo score --model DIR (--ids 1,2,3,… | --image FILE.png --text TEXT) [options]

${MODEL_HELP}
  --ids LIST             comma-separated token ids (at least 2)
  --image FILE.png       (Qwen3.5 vision-language models) one user message: this image, then --text,
  --text TEXT            through the chat template and the checkpoint's image processor
  --temperature T        logits are divided by T before log_softmax (default 1)
  --score-from N         first scored position (default 1: every token after the first)
  --grads OUT            also write d(mean logprob)/dW of every parameter (full fine-tuning, f32) to OUT.safetensors

${ADAPTER_HELP}`;

export function parseIds(text: string, flag = '--ids'): number[] {
  const ids = text.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  if (ids.length === 0 || ids.some((v) => !Number.isInteger(v) || v < 0)) throw new Error(`${flag} must be comma-separated non-negative integers, got '${text}'`);
  return ids;
}

export async function run(argv: string[]): Promise<number> {
  const p = parseCli(argv, {
    ...MODEL_OPTIONS, ids: { type: 'string' }, image: { type: 'string' }, text: { type: 'string' }, temperature: { type: 'string' }, 'score-from': { type: 'string' }, grads: { type: 'string' },
  });
  if (p.help) {
    console.log(HELP);
    return 0;
  }
  const idsText = str(p, 'ids');
  const image = str(p, 'image');
  const text = str(p, 'text');
  if ((idsText === undefined) === (image === undefined)) throw new Error(`give exactly one of --ids LIST or --image FILE.png (with --text)\n\n${HELP}`);
  if ((image === undefined) !== (text === undefined)) throw new Error('--image and --text go together');
  const ids = idsText !== undefined ? parseIds(idsText) : null;
  if (ids && ids.length < 2) throw new Error('--ids needs at least 2 ids (the first one is never scored)');
  const temperature = numOption(p, 'temperature', 1);
  const scoreFrom = intOption(p, 'score-from', 1, 1);
  const gradsOut = str(p, 'grads');
  const args = await modelArgs(p, HELP);
  if (gradsOut && (args.adapter || args.checkpoint)) throw new Error('--grads (full fine-tuning gradients of the base model) cannot be combined with --adapter or --checkpoint');

  const ckpt = await openCheckpoint(args.model);
  const seq: ScoreSequence = ids ? { ids, scoreFrom } : { ...(await imageScoreInput(ckpt, image!, text!)), scoreFrom };
  if (scoreFrom > seq.ids.length) throw new Error(`--score-from ${scoreFrom} is beyond the prompt's ${seq.ids.length} tokens`);
  await announceAdapter('score');
  const { engine, trained } = await loadTrainedEngine(ckpt, { ...args, weights: gradsOut ? 'f32' : args.weights }, image ? { vision: true } : {});
  try {
    const sequences = [seq];
    const out = await engine.score({ sequences, temperature });
    const result: Record<string, unknown> = {
      ids: seq.ids,
      // Where each image's tokens start in ids (the engine places images there, not at every <|image_pad|>).
      ...(seq.images ? { image_grid_thw: seq.images.grids, image_offsets: seq.images.offsets } : {}),
      score_from: scoreFrom,
      temperature,
      ...(trained ?? {}),
      logprobs: Array.from(out.logprobs[0]!),
      entropies: Array.from(out.entropy[0]!),
      ...engine.report(),
    };
    if (gradsOut) {
      engine.setTrainable({ kind: 'full' });
      engine.zeroGrad();
      const n = seq.ids.length - scoreFrom;
      // L = mean_t logprob_t  ⇒  dL/dlogprob_t = 1/n
      await engine.backward({ sequences, temperature, dLdLogp: [new Float32Array(n).fill(1 / n)] });
      const grads = await engine.readGrads();
      await writeFile(gradsOut, writeSafetensors(grads.map((g) => ({ name: g.name, dtype: 'F32' as const, shape: g.shape, data: encodeFromFloat32('F32', g.data) }))));
      result.grads = { file: gradsOut, tensors: grads.length, objective: 'mean token logprob' };
    }
    console.log(JSON.stringify(result));
  } finally {
    engine.destroy();
  }
  return 0;
}
