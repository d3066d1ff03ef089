// What a GRPO step is doing while no step has ended yet to time the run by (the first step, ~45 s on
// a CPU adapter): how long it has run, the phase it is in with its counts, and an estimate of the
// phase's time left from the share of it done so far (episodes over, sequences scored, micro-batches
// trained). The worker reports the phases (RunSpec.onProgress); the store keeps the latest.
import type { RunProgress } from '../rl/run.ts';
import { formatDuration } from './format.ts';

/** The latest progress report of the step running now, with when (performance.now()) the step and its phase began. */
export interface StepProgress {
  progress: RunProgress;
  stepSince: number;
  phaseSince: number;
}

/** The next report folded in: the phase clock restarts when the phase changes. */
export function nextStepProgress(prev: StepProgress | null, progress: RunProgress, now: number): StepProgress {
  const samePhase = prev !== null && prev.progress.phase === progress.phase && (progress.phase !== 'logprobs' || (prev.progress.phase === 'logprobs' && prev.progress.of === progress.of));
  return { progress, stepSince: prev?.stepSince ?? now, phaseSince: samePhase ? prev.phaseSince : now };
}

const STAGES = ['forward', 'backward', 'optimizer'] as const;
const plural = (n: number, word: string) => `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;

/** The share of the phase done (0…1), and the phase in words. */
function phaseOf(p: RunProgress): { done: number; words: string; phase: string } {
  switch (p.phase) {
    case 'rollouts':
      return {
        done: p.episodes > 0 ? p.episodesDone / p.episodes : 0,
        phase: 'rollouts',
        words: `rollouts: ${p.episodesDone}/${plural(p.episodes, 'episode')} done, ${plural(p.tokens, 'token')} sampled${p.envCallsInFlight > 0 ? `, ${plural(p.envCallsInFlight, 'env call')} running` : ''}`,
      };
    case 'logprobs':
      return { done: p.total > 0 ? p.done / p.total : 0, phase: 'scoring', words: `scoring ${p.of === 'old' ? 'old log-probs' : 'the KL reference'}: ${p.done}/${p.total} sequences` };
    case 'optimize':
      return {
        done: (p.microBatch - 1 + STAGES.indexOf(p.stage) / STAGES.length) / p.microBatches,
        phase: 'training',
        words: `training: micro-batch ${p.microBatch}/${p.microBatches}, ${p.stage === 'optimizer' ? 'AdamW step' : p.stage}`,
      };
  }
}

/**
 * "running 23s · rollouts: 5/16 episodes done, 834 tokens sampled · ~40s left in the rollouts" (after
 * "step 1 of 12"). `since`: when the step began as the page saw it, for a step with no report yet (an
 * SFT warm-up step reports none).
 */
export function stepProgressText(s: StepProgress | null, now: number, since: number): string {
  const elapsed = `running ${formatDuration(Math.max(0, (now - (s?.stepSince ?? since)) / 1000))}`;
  if (s === null) return `${elapsed}…`;
  const { done, words, phase } = phaseOf(s.progress);
  // No estimate before any of the phase is done (the first episodes may still be decoding).
  if (!(done > 0 && done < 1)) return `${elapsed} · ${words}`;
  const left = (((now - s.phaseSince) / 1000) * (1 - done)) / done;
  return `${elapsed} · ${words} · ~${formatDuration(left)} left in the ${phase}`;
}
