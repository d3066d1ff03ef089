// What `train` writes on stderr within a GRPO step: the phase with its counts, only when it moved (or
// on the heartbeat), after an SFT warm-up whose backward passes are not the step's micro-batches.
import { describe, expect, it } from 'vitest';
import { Progress } from '../../src/cli/progress.ts';
import { TrainProgress } from '../../src/cli/train-progress.ts';

function capture(heartbeatMs: number): { watch: TrainProgress; lines: string[] } {
  const lines: string[] = [];
  const stream = { isTTY: false, write: (s: string) => lines.push(...s.split('\n').filter((l) => l !== '')) } as unknown as NodeJS.WriteStream;
  return { watch: new TrainProgress(new Progress(stream, 0), 5000, heartbeatMs), lines };
}

describe('train progress on stderr', () => {
  it('names each phase with counts that move, and writes only what moved', () => {
    const { watch, lines } = capture(3_600_000);
    watch.sftStarting(2);
    for (const step of [1, 2]) watch.event({ phase: 'sft', step, totalSteps: 2, loss: 0.5, tokens: 10, grad_norm: 1, learning_rate: 1e-3, step_time: 1 });
    watch.grpoStarting(3, 1);
    lines.length = 0;
    watch.tick();
    expect(lines).toEqual([]);

    watch.onProgress({ phase: 'rollouts', episodes: 4, episodesDone: 1, decoding: 3, tokens: 40, envCallsInFlight: 2, envCallsDone: 7 });
    watch.tick();
    watch.tick(); // nothing moved: no second line
    watch.onProgress({ phase: 'rollouts', episodes: 4, episodesDone: 4, decoding: 0, tokens: 61, envCallsInFlight: 0, envCallsDone: 12 });
    watch.onProgress({ phase: 'logprobs', of: 'reference', done: 2, total: 4 });
    watch.tick();
    watch.onProgress({ phase: 'optimize', microBatch: 1, microBatches: 2, stage: 'backward' });
    watch.tick();
    const what = lines.map((l) => l.replace(/ \(\d+:\d\d into the step.*\)$/, ''));
    expect(what).toEqual([
      'GRPO step 1/3: rollouts: 3 sequences decoding, 1/4 episodes done, 40 tokens sampled; env: 2 calls in flight, 7 done',
      'GRPO step 1/3: reference log-probs (KL): 2/4 sequences scored',
      // The step's own micro-batches: the two SFT backward passes before it are not counted.
      'GRPO step 1/3: optimizing: micro-batch 1/2, backward',
    ]);
    expect(lines[0]).toMatch(/\(0:0\d into the step\)$/);
  });

  it('repeats the phase on the heartbeat while it does not move (a long backward is never silent)', () => {
    const { watch, lines } = capture(0);
    watch.grpoStarting(1, 1);
    watch.onProgress({ phase: 'optimize', microBatch: 1, microBatches: 1, stage: 'forward' });
    watch.tick();
    watch.tick();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('optimizing: micro-batch 1/1, log-prob forward');
  });
});
