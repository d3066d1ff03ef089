// Live counts of one generation batch's rollouts, for progress displays (the CLI's stderr): what the
// last decode step held, the tokens sampled, the episodes over, the env calls running and finished.
// Both schedulers feed the same counter (through the episode driver), so the counts mean the same.

export interface RolloutProgress {
  /** Episodes of the batch. */
  episodes: number;
  /** Episodes over (their env session closed). */
  episodesDone: number;
  /** Sequences decoding now: those of the latest decode step (each got one token), 0 while only env calls run. */
  decoding: number;
  /** Tokens sampled so far in the batch. */
  tokens: number;
  /** Env calls (resets, tool turns, closes) running now, and finished. */
  envCallsInFlight: number;
  envCallsDone: number;
}

export class RolloutCounter {
  private readonly counts: RolloutProgress;

  constructor(
    episodes: number,
    private readonly report: ((p: RolloutProgress) => void) | undefined,
  ) {
    this.counts = { episodes, episodesDone: 0, decoding: 0, tokens: 0, envCallsInFlight: 0, envCallsDone: 0 };
  }

  /** One decode step of `sequences` sequences. */
  decodeStep(sequences: number): void {
    this.counts.decoding = sequences;
    this.counts.tokens += sequences;
    this.emit();
  }

  /** No sequence decodes: the batch waits for env replies. */
  decodeIdle(): void {
    if (this.counts.decoding === 0) return;
    this.counts.decoding = 0;
    this.emit();
  }

  /** Counts `work` (an env call) while it runs. */
  async envCall<T>(work: Promise<T>): Promise<T> {
    this.counts.envCallsInFlight++;
    this.emit();
    try {
      return await work;
    } finally {
      this.counts.envCallsInFlight--;
      this.counts.envCallsDone++;
      this.emit();
    }
  }

  episodeDone(): void {
    this.counts.episodesDone++;
    this.emit();
  }

  private emit(): void {
    this.report?.({ ...this.counts });
  }
}
