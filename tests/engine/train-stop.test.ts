// score and backward cut short by their stop check (ScoreRequest.stopped): the call rejects with an
// AbortError at the next layer boundary, submitting nothing after the stop (one layer runs ahead of the
// one the check waits for, so the GPU never idles on it), and the engine stays usable — after a backward
// cut short and zeroGrad, a full backward gives a fresh engine's gradients exactly. The stop is set on
// the event loop's next turn after the call began (setImmediate), so it lands while the call's first
// layer is on the GPU and its second queued: no fixed wait, whatever the adapter's speed. "Within two
// layers" is asserted as submits (none after the stop). Times measured on lavapipe for this batch (4
// layers, 560 tokens; a 2-core machine shared with other work, 3 runs): a full backward 200–420 ms, from
// the stop to its AbortError 9–35 ms; a full score 45–56 ms, from the stop to its AbortError 2–15 ms.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, type Gpu } from '../../src/engine/gpu.ts';
import type { BackwardRequest, LoraTarget, NamedTensor, ScoreSequence } from '../../src/engine/types.ts';
import { onAdapter, someIds, tinyConfig, tinyEngine } from './helpers.ts';
import { someGrads } from './train-helpers.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const TARGETS: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
const LAYERS = 4;

/** The labels of the command encoders `device` creates from now on (one per submit), in order. */
function watchSubmits(device: GPUDevice): { labels: string[]; restore(): void } {
  const labels: string[] = [];
  const create = device.createCommandEncoder.bind(device);
  device.createCommandEncoder = (desc?: GPUCommandEncoderDescriptor) => {
    labels.push(desc?.label ?? '');
    return create(desc);
  };
  return { labels, restore: () => void (device.createCommandEncoder = create) };
}

/** Starts `call` with a stop check that turns true on the next turn of the event loop; returns when it settled. */
async function stoppedMidCall(device: GPUDevice, call: (stopped: () => boolean) => Promise<unknown>): Promise<{ error: unknown; before: string[]; after: string[] }> {
  const watch = watchSubmits(device);
  let stop = false;
  let at = -1;
  try {
    const pending = call(() => stop);
    setImmediate(() => {
      stop = true;
      at = watch.labels.length;
    });
    const error = await pending.then(() => null, (err: unknown) => err);
    return { error, before: watch.labels.slice(0, at), after: watch.labels.slice(at) };
  } finally {
    watch.restore();
  }
}

function expectSameTensors(got: NamedTensor[], want: NamedTensor[]): void {
  expect(got.map((t) => t.name)).toEqual(want.map((t) => t.name));
  got.forEach((t, i) => expect(t.data, t.name).toEqual(want[i]!.data));
}

describe(onAdapter('score and backward cut short by a stop'), () => {
  let gpu: Gpu;
  beforeAll(async () => { gpu = await getGpu(); });
  afterAll(() => gpu?.device.destroy());

  const cfg = tinyConfig({ numLayers: LAYERS });
  // Long sequences: every layer's work is the bulk of a call.
  const sequences: ScoreSequence[] = [
    { ids: someIds(300, cfg.vocabSize, 1), scoreFrom: 20 },
    { ids: someIds(260, cfg.vocabSize, 2), scoreFrom: 1 },
  ];
  const req: BackwardRequest = { sequences, temperature: 0.9, dLdLogp: someGrads(sequences, 3) };
  const lora = { kind: 'lora' as const, lora: { r: 4, alpha: 8, targetModules: TARGETS, seed: 7 } };

  it('a backward stopped mid-call submits no layer after the stop; zeroGrad + a full backward then give a fresh engine\'s grads', async () => {
    const fresh = (await tinyEngine(gpu, cfg, 5)).engine;
    fresh.setTrainable(lora);
    await fresh.backward(req);
    const want = await fresh.readGrads();
    fresh.destroy();

    const { engine } = await tinyEngine(gpu, cfg, 5);
    engine.setTrainable(lora);
    const { error, before, after } = await stoppedMidCall(gpu.device, (stopped) => engine.backward({ ...req, stopped }));
    expect(error).toMatchObject({ name: 'AbortError' });
    // The stop landed during the call (its forward's first layer on the GPU, the second queued ahead of
    // it) and nothing of it was submitted after: it returned at the boundary after the work in flight,
    // not at the call's end (LAYERS forward parts + the LM head's, then LAYERS layer backwards: 2·LAYERS
    // + 1 submits in all).
    expect(before.filter((l) => l.startsWith('train '))).toEqual(['train forward + LM head backward part 1', 'train forward + LM head backward part 2']);
    expect(after.filter((l) => l.startsWith('train '))).toEqual([]);

    engine.zeroGrad();
    await engine.backward(req);
    expectSameTensors(await engine.readGrads(), want);

    // A stop check that never fires changes no number (the same work, submitted layer by layer).
    engine.zeroGrad();
    const watch = watchSubmits(gpu.device);
    await engine.backward({ ...req, stopped: () => false });
    watch.restore();
    expect(watch.labels.filter((l) => l.startsWith('train '))).toHaveLength(2 * LAYERS + 1);
    expectSameTensors(await engine.readGrads(), want);
    engine.destroy();
  });

  it('a score stopped mid-call submits no layer after the stop, and the next score equals a fresh engine\'s', async () => {
    const fresh = (await tinyEngine(gpu, cfg, 6)).engine;
    const want = await fresh.score({ sequences, temperature: 0.9 });
    fresh.destroy();

    const { engine } = await tinyEngine(gpu, cfg, 6);
    const { error, before, after } = await stoppedMidCall(gpu.device, (stopped) => engine.score({ sequences, temperature: 0.9, stopped }));
    expect(error).toMatchObject({ name: 'AbortError' });
    expect(before.filter((l) => l.startsWith('score'))).toEqual(['score part 1', 'score part 2']);
    expect(after.filter((l) => l.startsWith('score'))).toEqual([]);

    expect(await engine.score({ sequences, temperature: 0.9 })).toEqual(want);
    expect(await engine.score({ sequences, temperature: 0.9, stopped: () => false })).toEqual(want);
    engine.destroy();
  });
});
