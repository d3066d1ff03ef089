// `webgrpo generate --model DIR --prompt TEXT|--ids … --n N --max-new-tokens K --seed S`:
// N sampled completions of one prompt, batched on the GPU, as JSON (ids, text, sampling logprobs).

import { openCheckpoint } from '../model/checkpoint.ts';
import { loadTokenizer, type TextTokenizer } from '../model/tokenizer.ts';
import type { Checkpoint } from '../model/types.ts';
import { loadEngine } from '../engine/engine.ts';
import { parseFlags, parseIds, parseNumber } from './score.ts';

const HELP = `usage: webgrpo generate --model DIR (--prompt TEXT | --ids 1,2,3) [options]

  --model DIR|REPO       checkpoint folder (Hugging Face layout), URL or Hub repo id
  --prompt TEXT          prompt text, encoded with the checkpoint's tokenizer (no chat template applied)
  --ids LIST             prompt as comma-separated token ids instead
  --n N                  completions to sample, decoded as one batch (default 1)
  --max-new-tokens K     per completion (default 32)
  --seed S               sampling seed (default 0); same seed, same completions
  --temperature T        default 1; 0 = greedy
  --top-p P              default 1 (off)
  --top-k K              default 0 (off)
  --stop-ids LIST        stop after any of these ids (default: the config's eos_token_id ids)
  --weights f32|f16|auto weight storage on the GPU (default auto)`;

function intFlag(flags: Map<string, string>, flag: string, dflt: number, min: number): number {
  if (!flags.has(flag)) return dflt;
  const v = parseNumber(flags.get(flag), flag);
  if (!Number.isInteger(v) || v < min) throw new Error(`${flag} must be an integer ≥ ${min}, got ${v}`);
  return v;
}

async function tokenizerOf(ckpt: Checkpoint): Promise<TextTokenizer | null> {
  const json = await ckpt.readText('tokenizer.json');
  const config = await ckpt.readText('tokenizer_config.json');
  return json && config ? loadTokenizer(json, config) : null;
}

export async function run(argv: string[]): Promise<number> {
  const flags = parseFlags(argv, ['--model', '--prompt', '--ids', '--n', '--max-new-tokens', '--seed', '--temperature', '--top-p', '--top-k', '--stop-ids', '--weights']);
  if (flags === 'help') {
    console.log(HELP);
    return 0;
  }
  const model = flags.get('--model');
  if (!model) throw new Error(`--model is required\n\n${HELP}`);
  if (flags.has('--prompt') === flags.has('--ids')) throw new Error('give exactly one of --prompt TEXT or --ids LIST');
  const n = intFlag(flags, '--n', 1, 1);
  const maxNewTokens = intFlag(flags, '--max-new-tokens', 32, 0);
  const seed = intFlag(flags, '--seed', 0, 0);
  const topK = intFlag(flags, '--top-k', 0, 0);
  const temperature = flags.has('--temperature') ? parseNumber(flags.get('--temperature'), '--temperature') : 1;
  const topP = flags.has('--top-p') ? parseNumber(flags.get('--top-p'), '--top-p') : 1;
  const weights = flags.get('--weights') ?? 'auto';
  if (!['f32', 'f16', 'auto'].includes(weights)) throw new Error(`--weights must be f32, f16 or auto, got '${weights}'`);

  const ckpt = await openCheckpoint(model);
  const tokenizer = await tokenizerOf(ckpt);
  let promptIds: number[];
  if (flags.has('--prompt')) {
    if (!tokenizer) throw new Error(`--prompt needs tokenizer.json and tokenizer_config.json in ${model}; use --ids instead`);
    promptIds = tokenizer.encode(flags.get('--prompt')!);
    if (promptIds.length === 0) throw new Error('--prompt encodes to no tokens');
  } else {
    promptIds = parseIds(flags.get('--ids')!);
  }
  const stopIds = flags.has('--stop-ids') ? parseIds(flags.get('--stop-ids')!, '--stop-ids') : ckpt.config.eosTokenIds;

  const engine = await loadEngine(ckpt, { weightDtype: weights as 'f32' | 'f16' | 'auto' });
  try {
    const seqs = Array.from({ length: n }, () => engine.newSequence());
    const out = await engine.generate({
      items: seqs.map((seq) => ({ seq, append: promptIds, maxNewTokens })),
      sampling: { temperature, topP, topK, seed },
      stopIds,
    });
    console.log(JSON.stringify({
      prompt_ids: promptIds,
      sampling: { temperature, top_p: topP, top_k: topK, seed },
      completions: out.map((o) => ({
        ids: o.tokens,
        text: tokenizer ? tokenizer.decode(o.tokens) : null,
        logprobs: o.logprobs,
        finish_reason: o.finishReason,
      })),
      ...engine.report(),
    }));
  } finally {
    engine.destroy();
  }
  return 0;
}
