// `webgrpo score --model DIR --ids 1,2,3 [--temperature T] [--score-from N] [--grads OUT.safetensors]`:
// per-token log-probs and entropies of the given ids (position t scored from positions < t) as
// JSON; with --grads, the full-fine-tuning gradients of the MEAN token log-prob under the
// checkpoint's own tensor names, written as F32 safetensors.

import { writeFile } from 'node:fs/promises';
import { openCheckpoint } from '../model/checkpoint.ts';
import { encodeFromFloat32, writeSafetensors } from '../model/safetensors.ts';
import { loadEngine } from '../engine/engine.ts';

const HELP = `usage: webgrpo score --model DIR --ids 1,2,3,… [options]

  --model DIR|REPO       checkpoint folder (Hugging Face layout), URL or Hub repo id
  --ids LIST             comma-separated token ids (at least 2)
  --temperature T        logits are divided by T before log_softmax (default 1)
  --score-from N         first scored position (default 1: every token after the first)
  --grads OUT            also write d(mean logprob)/dW of every parameter (full fine-tuning, f32) to OUT.safetensors
  --weights f32|f16|auto weight storage on the GPU (default auto; --grads forces f32)`;

export function parseIds(text: string, flag = '--ids'): number[] {
  const ids = text.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  if (ids.length === 0 || ids.some((v) => !Number.isInteger(v) || v < 0)) throw new Error(`${flag} must be comma-separated non-negative integers, got '${text}'`);
  return ids;
}

export function parseNumber(text: string | undefined, flag: string): number {
  const v = Number(text);
  if (text === undefined || !Number.isFinite(v)) throw new Error(`${flag} needs a number, got '${text ?? ''}'`);
  return v;
}

/** --flag value pairs; `allowed` lists the flags the command knows. */
export function parseFlags(argv: string[], allowed: string[]): Map<string, string> | 'help' {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (flag === '--help' || flag === '-h') return 'help';
    if (!allowed.includes(flag)) throw new Error(`unknown option ${flag} (see --help)`);
    const value = argv[i + 1];
    if (value === undefined || (value.startsWith('--') && value.length > 2 && !/^--?\d/.test(value))) throw new Error(`${flag} needs a value`);
    flags.set(flag, value);
    i++;
  }
  return flags;
}

export async function run(argv: string[]): Promise<number> {
  const flags = parseFlags(argv, ['--model', '--ids', '--temperature', '--score-from', '--grads', '--weights']);
  if (flags === 'help') {
    console.log(HELP);
    return 0;
  }
  const model = flags.get('--model');
  const idsText = flags.get('--ids');
  if (!model || !idsText) throw new Error(`--model and --ids are required\n\n${HELP}`);
  const ids = parseIds(idsText);
  if (ids.length < 2) throw new Error('--ids needs at least 2 ids (the first one is never scored)');
  const temperature = flags.has('--temperature') ? parseNumber(flags.get('--temperature'), '--temperature') : 1;
  const scoreFrom = flags.has('--score-from') ? parseNumber(flags.get('--score-from'), '--score-from') : 1;
  const gradsOut = flags.get('--grads');
  const weights = flags.get('--weights') ?? 'auto';
  if (!['f32', 'f16', 'auto'].includes(weights)) throw new Error(`--weights must be f32, f16 or auto, got '${weights}'`);

  const ckpt = await openCheckpoint(model);
  const engine = await loadEngine(ckpt, { weightDtype: gradsOut ? 'f32' : (weights as 'f32' | 'f16' | 'auto') });
  try {
    const sequences = [{ ids, scoreFrom }];
    const out = await engine.score({ sequences, temperature });
    const result: Record<string, unknown> = {
      ids,
      score_from: scoreFrom,
      temperature,
      logprobs: Array.from(out.logprobs[0]!),
      entropies: Array.from(out.entropy[0]!),
      ...engine.report(),
    };
    if (gradsOut) {
      engine.setTrainable({ kind: 'full' });
      engine.zeroGrad();
      const n = ids.length - scoreFrom;
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
