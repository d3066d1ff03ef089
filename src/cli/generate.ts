// `webgrpo generate --model DIR --prompt TEXT|--ids … [--adapter DIR | --checkpoint DIR] --n N --max-new-tokens K --seed S`:
// N sampled completions of one prompt, batched on the GPU, as JSON (ids, text, sampling logprobs).

import { openCheckpoint, type OpenedCheckpoint } from '../model/checkpoint.ts';
import { loadCheckpointTokenizer, type TextTokenizer } from '../model/tokenizer.ts';
import { intOption, numOption, parseCli, str } from './args.ts';
import { loadTrainedEngine, MODEL_HELP, MODEL_OPTIONS, modelArgs } from './model-args.ts';
import { parseIds } from './score.ts';
import { ADAPTER_HELP, announceAdapter } from './adapter-line.ts';

const HELP = `usage: webgrpo generate --model DIR (--prompt TEXT | --ids 1,2,3) [options]

${MODEL_HELP}
  --prompt TEXT          prompt text, encoded with the checkpoint's tokenizer (no chat template applied)
  --ids LIST             prompt as comma-separated token ids instead
  --n N                  completions to sample, decoded as one batch (default 1)
  --max-new-tokens K     per completion (default 32)
  --seed S               sampling seed (default 0); same seed, same completions
  --temperature T        default 1; 0 = greedy
  --top-p P              default 1 (off)
  --top-k K              default 0 (off)
  --stop-ids LIST        stop after any of these ids (default: the config's eos_token_id ids)

${ADAPTER_HELP}`;

async function tokenizerOf(ckpt: OpenedCheckpoint): Promise<TextTokenizer | null> {
  // Token ids work without a tokenizer; text needs one.
  if ((await ckpt.files.size('tokenizer.json')) === null) return null;
  return loadCheckpointTokenizer(ckpt, ckpt.location);
}

export async function run(argv: string[]): Promise<number> {
  const p = parseCli(argv, {
    ...MODEL_OPTIONS,
    prompt: { type: 'string' }, ids: { type: 'string' }, n: { type: 'string' }, 'max-new-tokens': { type: 'string' }, seed: { type: 'string' },
    temperature: { type: 'string' }, 'top-p': { type: 'string' }, 'top-k': { type: 'string' }, 'stop-ids': { type: 'string' },
  });
  if (p.help) {
    console.log(HELP);
    return 0;
  }
  const prompt = str(p, 'prompt');
  const idsText = str(p, 'ids');
  if ((prompt === undefined) === (idsText === undefined)) throw new Error('give exactly one of --prompt TEXT or --ids LIST');
  const n = intOption(p, 'n', 1, 1);
  const maxNewTokens = intOption(p, 'max-new-tokens', 32, 0);
  const seed = intOption(p, 'seed', 0, 0);
  const topK = intOption(p, 'top-k', 0, 0);
  const temperature = numOption(p, 'temperature', 1);
  const topP = numOption(p, 'top-p', 1);
  const args = await modelArgs(p, HELP);

  const ckpt = await openCheckpoint(args.model);
  const tokenizer = await tokenizerOf(ckpt);
  let promptIds: number[];
  if (prompt !== undefined) {
    if (!tokenizer) throw new Error(`--prompt needs tokenizer.json and tokenizer_config.json in ${args.model}; use --ids instead`);
    promptIds = tokenizer.encode(prompt);
    if (promptIds.length === 0) throw new Error('--prompt encodes to no tokens');
  } else {
    promptIds = parseIds(idsText!);
  }
  const stopIdsText = str(p, 'stop-ids');
  const stopIds = stopIdsText !== undefined ? parseIds(stopIdsText, '--stop-ids') : ckpt.config.eosTokenIds;

  await announceAdapter('generate');
  const { engine, trained } = await loadTrainedEngine(ckpt, args);
  try {
    const seqs = Array.from({ length: n }, () => engine.newSequence());
    const out = await engine.generate({
      items: seqs.map((seq) => ({ seq, append: promptIds, maxNewTokens })),
      sampling: { temperature, topP, topK, seed },
      stopIds,
    });
    console.log(JSON.stringify({
      prompt_ids: promptIds,
      ...(trained ?? {}),
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
