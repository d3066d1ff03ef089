// `webgrpo train --env echo` on a tiny Qwen3.5 (make-tiny-model --arch qwen3_5: DeltaNet, gated
// attention, DeltaNet): a few GRPO steps with LoRA on every linear of both layer types, and the PEFT
// adapter they export under Qwen3.5's module names.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runTrainCli } from './train-cli-run.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { decodeToFloat32, parseSafetensors } from '../../src/model/safetensors.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

let dir = '';
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('webgrpo train on a tiny Qwen3.5', () => {
  it('GRPO on the echo task with LoRA on all 12 linears: steps with gradients, a PEFT adapter under Qwen3.5 names', async () => {
    dir = await mkdtemp(join(tmpdir(), 'webgrpo-train-qwen3_5-'));
    const model = join(dir, 'model');
    await mkdir(model);
    const files = await makeTinyCheckpointFiles({ arch: 'qwen3_5', seed: 5, hidden: 32, layers: 3, layerTypes: ['linear_attention', 'full_attention', 'linear_attention'], heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 });
    for (const [name, bytes] of files) await writeFile(join(model, name), bytes);
    const output = join(dir, 'out');
    const targets = 'q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj,in_proj_qkv,in_proj_z,in_proj_b,in_proj_a,out_proj';
    const { code, lines } = await runTrainCli([
      '--model', model, '--env', 'echo', '--output', output, '--num_generations', '2', '--per_device_train_batch_size', '2',
      '--max_completion_length', '24', '--learning_rate', '1e-2', '--train_mode', 'lora', '--lora_r', '4', '--lora_alpha', '8',
      // A random model never echoes: every reward is 0, so every advantage is too. The entropy bonus
      // gives the steps a gradient through every layer all the same.
      '--lora_target_modules', targets, '--max_steps', '2', '--entropy_coef', '0.01',
    ]);
    expect(code).toBe(0);
    expect(lines.map((l) => [l.phase, l.step])).toEqual([['load', undefined], ['grpo', 1], ['grpo', 2], ['done', undefined]]);
    for (const step of lines.slice(1, 3)) {
      expect(Number.isFinite(step.reward as number), 'reward').toBe(true);
      expect(Number.isFinite(step.entropy as number), 'entropy').toBe(true);
      expect(step.grad_norm as number).toBeGreaterThan(0);
    }
    const adapter = join(output, 'adapter');
    expect(JSON.parse(await readFile(join(adapter, 'adapter_config.json'), 'utf8'))).toMatchObject({ peft_type: 'LORA', r: 4, target_modules: expect.arrayContaining(targets.split(',')) });
    const bytes = new Uint8Array(await readFile(join(adapter, 'adapter_model.safetensors')));
    const tensors = parseSafetensors(bytes).tensors;
    const names = new Set(tensors.map((t) => t.name));
    // DeltaNet targets in the linear-attention layers, attention targets in the full-attention one.
    for (const name of ['model.layers.0.linear_attn.in_proj_qkv', 'model.layers.2.linear_attn.out_proj', 'model.layers.1.self_attn.q_proj', 'model.layers.1.mlp.down_proj']) {
      expect(names, name).toContain(`base_model.model.${name}.lora_A.weight`);
    }
    expect([...names].some((n) => /layers\.[02]\.self_attn|layers\.1\.linear_attn/.test(n))).toBe(false);
    // The steps moved the adapter: lora_B starts at zero.
    const b = tensors.find((t) => t.name === 'base_model.model.model.layers.0.linear_attn.in_proj_qkv.lora_B.weight')!;
    expect(decodeToFloat32(b, bytes.subarray(b.fileOffset, b.fileOffset + b.byteLength)).some((v) => v !== 0)).toBe(true);
  });
});
