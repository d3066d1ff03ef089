// The files a run leaves for the run store, from the trainer worker's API in Node (Dawn/SwiftShader):
// a fully fine-tuned tiny model exported in Hugging Face layout that our own loader opens again with
// the trained weights in it, and a run's trainer checkpoint packed as files and kept in another
// browser's storage, from where the run can resume.
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import type { WorkerEvents } from '../../workers/api.ts';
import { refScore } from '../../src/engine/reference/qwen3.ts';
import { refWeightsFromCheckpoint } from '../../src/engine/reference/weights.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { TINY_MODEL_OPTIONS } from '../../workers/load-model.ts';
import { memoryRunStates } from '../../workers/run-states.ts';
import { CHECKPOINT_META_FILE, unpackRunState } from '../../workers/run-files.ts';
import { TrainerService } from '../../workers/trainer-service.ts';
import { E2E_RUN_CONFIG } from './run-config.ts';

const quiet: WorkerEvents = { onProgress: () => undefined, onStep: () => undefined, onStatus: () => undefined };

describe('files kept with a run', { timeout: 300_000 }, () => {
  let server: EnvServer;
  const service = new TrainerService({ checkpoints: memoryRunStates() });

  beforeAll(async () => {
    server = await createEnvServer({});
    await service.loadModel({ kind: 'tiny' }, { onProgress: () => undefined });
    await service.train(
      { runId: 'full-1', config: { ...E2E_RUN_CONFIG, sft_steps: 1, max_steps: 1, train_mode: 'full' }, envUrl: `${server.url}/envs/catch`, task: 'catch', resume: false },
      quiet,
    );
  }, 300_000); // one SFT and one GRPO step of the tiny model on SwiftShader
  afterAll(async () => {
    await server?.close();
  });

  it('exports the fully fine-tuned model in Hugging Face layout, which loads again with the trained weights', async () => {
    const files = new Map((await service.exportModel()).map((f) => [f.name, f.bytes]));
    expect([...files.keys()]).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']));
    const exported = await openCheckpoint(files);
    const base = await openCheckpoint(await makeTinyCheckpointFiles(TINY_MODEL_OPTIONS));
    expect([...exported.tensors.keys()].sort()).toEqual([...base.tensors.keys()].sort());
    let changed = 0;
    for (const name of base.tensors.keys()) {
      const [a, b] = [await base.readTensor(name), await exported.readTensor(name)];
      expect(b.length, name).toBe(a.length);
      if (Buffer.compare(Buffer.from(a), Buffer.from(b)) !== 0) changed++;
    }
    // An SFT step (a GRPO step of equal rewards has no gradient) moves most weights; none went missing.
    expect(changed).toBeGreaterThan(base.tensors.size / 2);
  });

  it('"download for transformers.js" holds the trained weights: onnxruntime scores the ONNX as the float64 reference scores the downloaded model', async () => {
    const onnx = await service.exportOnnx();
    expect(onnx.map((f) => f.name)).toEqual(expect.arrayContaining(['onnx/model.onnx', 'config.json', 'tokenizer.json', 'tokenizer_config.json']));
    const trained = await openCheckpoint(new Map((await service.exportModel()).map((f) => [f.name, f.bytes])));
    const base = await openCheckpoint(await makeTinyCheckpointFiles(TINY_MODEL_OPTIONS));
    const cfg = trained.config;
    const ids = [5, 70, 33, 9, 120, 64, 2, 17];
    const i64 = (v: number[]) => new ort.Tensor('int64', BigInt64Array.from(v.map(BigInt)), [1, v.length]);
    const feeds: Record<string, ort.Tensor> = { input_ids: i64(ids), attention_mask: i64(ids.map(() => 1)), position_ids: i64(ids.map((_, i) => i)) };
    for (let l = 0; l < cfg.numLayers; l++) for (const kv of ['key', 'value']) feeds[`past_key_values.${l}.${kv}`] = new ort.Tensor('float32', new Float32Array(0), [1, cfg.numKvHeads, 0, cfg.headDim]);
    const session = await ort.InferenceSession.create(onnx.find((f) => f.name === 'onnx/model.onnx')!.bytes);
    const logits = (await session.run(feeds)).logits!.data as Float32Array;
    const V = cfg.vocabSize;
    const got = ids.slice(1).map((id, t) => {
      const row = logits.subarray(t * V, (t + 1) * V);
      const max = row.reduce((m, x) => Math.max(m, x), -Infinity);
      return row[id]! - max - Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
    });
    const want = refScore(cfg, await refWeightsFromCheckpoint(trained), { ids, scoreFrom: 1 }, 1).logprobs;
    const before = refScore(cfg, await refWeightsFromCheckpoint(base), { ids, scoreFrom: 1 }, 1).logprobs;
    const diff = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));
    expect(diff(got, want)).toBeLessThan(1e-4);
    expect(diff(want, before)).toBeGreaterThan(1e-3); // training moved the scores, so the check sees the weights
  });

  it('packs the run checkpoint as files another browser keeps and resumes from', async () => {
    const packed = await service.exportCheckpoint('full-1');
    expect(packed).not.toBeNull();
    expect(packed!.map((f) => f.name)).toContain(CHECKPOINT_META_FILE);
    expect(await service.exportCheckpoint('no-such-run')).toBeNull();
    const elsewhere = new TrainerService({ checkpoints: memoryRunStates() });
    expect(await elsewhere.checkpointStep('full-1')).toBeNull();
    expect(await elsewhere.importCheckpoint('full-1', packed!)).toBe(2);
    expect(await elsewhere.checkpointStep('full-1')).toBe(2);
    expect(() => unpackRunState(packed!.filter((f) => f.name !== CHECKPOINT_META_FILE))).toThrow(/run-checkpoint.json is missing/);
  });
});
