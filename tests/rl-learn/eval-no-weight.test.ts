// TRL's eval loop changes nothing it evaluates: after a real optimizer step (so the AdamW moments
// are non-zero), an evaluation on the held-out split leaves every weight, every moment and the step
// counter bit-identical — it only generates. The demo model on lavapipe, the catch task's held-out games.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createEnvServer } from '../../env-server/server.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { loadCheckpointTokenizer } from '../../src/model/tokenizer.ts';
import { configFromObject } from '../../src/rl/config.ts';
import { splitRows } from '../../src/rl/eval/eval-rows.ts';
import { seedSpace } from '../../src/rl/eval/seed-space.ts';
import { trainerEvaluator } from '../../src/rl/eval/trainer-eval.ts';
import { presetConfig } from '../../src/rl/tasks/presets.ts';
import { bindTask, builtinEnvUrls, resolveTask } from '../../src/rl/tasks/resolve-task.ts';

const DEMO_MODEL = fileURLToPath(new URL('../../models/demo', import.meta.url));

describe('an evaluation changes no weight', () => {
  it('weights, AdamW moments and the step count are bit-identical before and after', async () => {
    const server = await createEnvServer({ port: 0, heartbeatMs: 3_600_000 });
    const ckpt = await openCheckpoint(DEMO_MODEL);
    const engine = await loadEngine(ckpt, { weightDtype: 'f32' });
    try {
      const tokenizer = await loadCheckpointTokenizer(ckpt, DEMO_MODEL);
      engine.setTrainable({ kind: 'full' });
      // One real update first: moments and step are then not their zero defaults.
      const seq = { ids: [1, 2, 3, 4, 5, 6], scoreFrom: 1 };
      engine.zeroGrad();
      await engine.backward({ sequences: [seq], temperature: 1, dLdLogp: [new Float32Array(5).fill(0.2)] });
      await engine.step({ learningRate: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 });
      const before = await engine.saveState();
      expect(before.step).toBe(1);
      expect(before.tensors.some((t) => /exp_avg$/.test(t.name) && t.data.some((x) => x !== 0))).toBe(true);

      const resolved = await resolveTask({ env: 'catch', tier: 'tiny' });
      const config = configFromObject({ ...presetConfig('catch', 'tiny'), num_generations_eval: 2, per_device_eval_batch_size: 8 });
      const task = bindTask(resolved, { tokenizer, builtinUrls: builtinEnvUrls(server.url), split: 'eval' });
      const rows = splitRows(resolved, 'eval').slice(0, 4);
      const evaluate = trainerEvaluator({ engine, tokenizer, config, evaluation: { task, rows, seedOf: seedSpace(resolved.env, 'eval') } });
      const metrics = await evaluate(1);
      expect(metrics.eval_episodes).toBe(8);
      expect(Number.isFinite(metrics.eval_reward)).toBe(true);
      expect(metrics['eval_rewards/caught/mean']).toBeGreaterThanOrEqual(0);
      expect(Object.keys(metrics).filter((k) => !k.startsWith('eval_'))).toEqual([]);

      const after = await engine.saveState();
      expect(after.step).toBe(before.step);
      expect(after.tensors.map((t) => t.name)).toEqual(before.tensors.map((t) => t.name));
      after.tensors.forEach((t, i) => {
        const a = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
        const b = new Uint8Array(before.tensors[i]!.data.buffer, before.tensors[i]!.data.byteOffset, before.tensors[i]!.data.byteLength);
        expect(Buffer.compare(Buffer.from(a), Buffer.from(b)), t.name).toBe(0);
      });
    } finally {
      engine.destroy();
      await server.close();
    }
  }, 300_000);
});
