// What a run trained with travels with every export of it (issue 33): the chat template kwargs and the
// env's tool schemas ride in a PEFT adapter's safetensors metadata (PEFT's `format` kept) and land in
// the tokenizer_config.json of the ONNX folder and of the full model folder, the rest of the base's
// tokenizer config unchanged. CPU only: the demo checkpoint and a stand-in engine state.

import { describe, expect, it } from 'vitest';
import { peftAdapterFiles, readPeftAdapter } from '../../src/engine/peft-adapter.ts';
import { fullModelFiles } from '../../src/export/full-model.ts';
import { exportOnnx } from '../../src/export/onnx/export.ts';
import { trainedChat, trainedChatFromMetadata, trainedChatMetadata, withTrainedChat } from '../../src/export/trained-chat.ts';
import { openCheckpoint, readTensorFloat32 } from '../../src/model/checkpoint.ts';
import { parseSafetensors } from '../../src/model/safetensors.ts';
import { toolSchema, type ToolDeclaration } from '../../src/rl/rollout/schema.ts';

/** TRL's echo tool (examples/echo.mjs's JSDoc; echo.py's docstring) as a declaration. */
const ECHO_TOOL: ToolDeclaration = {
  name: 'echo',
  description: 'Echo the message back from the environment.',
  parameters: [{ name: 'message', type: 'string', description: 'The message to echo' }],
  returns: { type: 'string', description: 'The echoed message.' },
};

const CHAT = trainedChat({ chat_template_kwargs: { enable_thinking: false } }, { tools: [toolSchema(ECHO_TOOL)] });
const text = (files: { name: string; bytes: Uint8Array }[], name: string) => new TextDecoder().decode(files.find((f) => f.name === name)!.bytes);

describe("a run's chat in its exports", () => {
  it('round-trips through an adapter\'s safetensors metadata, beside PEFT\'s format', async () => {
    const ckpt = await openCheckpoint('models/demo');
    const shape = (n: string) => ckpt.tensors.get(n)!.shape;
    const q = 'model.layers.0.self_attn.q_proj';
    const [out, inp] = shape(`${q}.weight`);
    const exported = {
      adapterConfig: { peft_type: 'LORA', r: 2, lora_alpha: 4, target_modules: ['q_proj'], base_model_name_or_path: 'models/demo' },
      tensors: Array.from({ length: ckpt.config.numLayers }, (_, l) => [
        { name: `base_model.model.model.layers.${l}.self_attn.q_proj.lora_A.weight`, shape: [2, inp!], data: new Float32Array(2 * inp!).fill(0.01) },
        { name: `base_model.model.model.layers.${l}.self_attn.q_proj.lora_B.weight`, shape: [out!, 2], data: new Float32Array(2 * out!).fill(0.01) },
      ]).flat(),
    };
    const files = peftAdapterFiles(exported, trainedChatMetadata(CHAT));
    expect(parseSafetensors(files.get('adapter_model.safetensors')!, 'adapter').metadata.format).toBe('pt');
    const adapter = await readPeftAdapter(files, ckpt.config);
    expect(trainedChatFromMetadata(adapter.metadata ?? {}, 'adapter')).toEqual(CHAT);
    // An adapter from elsewhere records nothing; a damaged record is named.
    expect(trainedChatFromMetadata({ format: 'pt' }, 'adapter')).toBeNull();
    expect(() => trainedChatFromMetadata({ 'webgrpo.tools': '{"name": 1}' }, 'adapter x')).toThrow('adapter x: metadata tools must be a list');
    expect(() => trainedChatFromMetadata({ 'webgrpo.chat_template_kwargs': '{' }, 'adapter x')).toThrow('adapter x: metadata webgrpo.chat_template_kwargs is not valid JSON');
  });

  it('lands in the ONNX folder\'s tokenizer_config.json, the base\'s keys kept', async () => {
    const ckpt = await openCheckpoint('models/demo');
    const base = JSON.parse((await ckpt.readText('tokenizer_config.json'))!);
    const config = JSON.parse(text(await exportOnnx(ckpt, { chat: CHAT }), 'tokenizer_config.json'));
    expect(config).toEqual({ ...base, chat_template_kwargs: { enable_thinking: false }, tools: CHAT.tools });
    expect(config.tools[0].function.name).toBe('echo');
    // No record: the base's file as it is.
    expect(JSON.parse(text(await exportOnnx(ckpt), 'tokenizer_config.json'))).toEqual(base);
  });

  it('lands in the full model folder\'s tokenizer_config.json', async () => {
    const ckpt = await openCheckpoint('models/demo');
    const name = 'model.norm.weight';
    const engine = { saveState: async () => ({ tensors: [{ name, shape: ckpt.tensors.get(name)!.shape, data: await readTensorFloat32(ckpt, name) }], step: 1 }) };
    const config = JSON.parse(text(await fullModelFiles(engine, ckpt, CHAT), 'tokenizer_config.json'));
    expect(config.chat_template_kwargs).toEqual({ enable_thinking: false });
    expect(config.tools).toEqual(CHAT.tools);
  });

  it('a run without kwargs or known tools says so: null kwargs replace an older value, unknown tools are left out', () => {
    const older = JSON.stringify({ chat_template: 'x', chat_template_kwargs: { enable_thinking: true } });
    expect(JSON.parse(withTrainedChat(older, { chat_template_kwargs: null, tools: null }))).toEqual({ chat_template: 'x', chat_template_kwargs: null });
    expect(() => withTrainedChat('{', CHAT)).toThrow("the checkpoint's tokenizer_config.json is not valid JSON");
  });
});
