// `webgrpo export onnx --model DIR [--adapter DIR | --checkpoint DIR] --out OUT [--dtype fp32|fp16]`:
// writes the model (what was trained merged in) as a folder transformers.js loads
// (src/export/onnx/export.ts), and prints one JSON object naming the files.

import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { readPeftAdapter } from '../engine/peft-adapter.ts';
import { exportOnnx, ONNX_DTYPES, type OnnxExportOptions } from '../export/onnx/export.ts';
import { trainedWeights } from '../export/onnx/trained-weights.ts';
import { trainedChatFromMetadata } from '../export/trained-chat.ts';
import { openCheckpoint } from '../model/checkpoint.ts';
import { choiceOption, parseCli, str } from './args.ts';
import { MODEL_OPTIONS, modelArgs } from './model-args.ts';

const HELP = `usage: webgrpo export onnx --model DIR [--adapter DIR | --checkpoint DIR] --out OUT [--dtype fp32|fp16]

Writes OUT in the layout transformers.js loads for text generation: onnx/model.onnx (fp32) or
onnx/model_fp16.onnx (fp16 weights, float32 compute), config.json, generation_config.json and the
tokenizer files with the chat template. A LoRA adapter or trainer checkpoint is merged into the weights,
and what the run rendered its chats with goes into tokenizer_config.json: chat_template_kwargs (an
adapter's or checkpoint's) and the env's tools (an adapter's from \`train --output\` or the app).

  --model DIR|REPO       checkpoint folder (Hugging Face layout), URL or Hub repo id
                         (default with --adapter: the adapter's base_model_name_or_path)
  --adapter DIR          a PEFT LoRA adapter to merge
  --checkpoint DIR       a trainer checkpoint (checkpoint-N of \`train --output\`, or that folder: its newest)
  --out OUT              the folder to write (created if missing)
  --dtype fp32|fp16      weight precision (default fp32)`;

export async function run(argv: string[]): Promise<number> {
  const { weights: _unused, ...options } = MODEL_OPTIONS;
  const p = parseCli(argv, { ...options, out: { type: 'string' }, dtype: { type: 'string' } }, { positionals: true });
  if (p.help) {
    console.log(HELP);
    return 0;
  }
  const [format, ...extra] = p.positionals;
  if (format !== 'onnx' || extra.length > 0) throw new Error(`the export format must be 'onnx' (the only one), got '${p.positionals.join(' ')}'\n\n${HELP}`);
  const out = str(p, 'out');
  if (!out) throw new Error(`--out is required\n\n${HELP}`);
  const dtype = choiceOption(p, 'dtype', ONNX_DTYPES, 'fp32');
  const args = await modelArgs(p, HELP);

  const ckpt = await openCheckpoint(args.model);
  const opts: OnnxExportOptions = { dtype };
  if (args.adapter) {
    opts.adapter = await readPeftAdapter(args.adapter, ckpt.config);
    opts.chat = trainedChatFromMetadata(opts.adapter.metadata ?? {}, `adapter ${args.adapter}`);
  }
  if (args.checkpoint) {
    Object.assign(opts, trainedWeights(args.checkpoint.ckpt, new Set(ckpt.tensors.keys())));
    // A trainer checkpoint keeps the run's config, not its env: the tools are not known here.
    opts.chat = { chat_template_kwargs: args.checkpoint.ckpt.config.chat_template_kwargs, tools: null };
  }
  const files = await exportOnnx(ckpt, opts);
  for (const f of files) {
    const path = join(out, f.name);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, f.bytes);
  }
  console.log(JSON.stringify({
    out,
    model: args.model,
    ...(args.adapter ? { lora_adapter: args.adapter } : {}),
    ...(args.checkpoint ? { checkpoint: args.checkpoint.dir, step: args.checkpoint.ckpt.counters.step } : {}),
    dtype,
    ...(opts.chat ? { chat_template_kwargs: opts.chat.chat_template_kwargs, tools: opts.chat.tools?.map((t) => t.function.name) ?? null } : {}),
    files: files.map((f) => ({ name: f.name, bytes: f.bytes.byteLength })),
  }));
  return 0;
}
