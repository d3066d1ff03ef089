// Starts the slowest files first (by the kept tests/timings.json), across projects: on two workers a
// long file that starts last decides the suite's wall time, and vitest's own order (by project name,
// then by a results cache a fresh clone does not have) can start the demo runs last. Files without a
// kept time (new ones) go first, since nothing says they are short. Serial groups still run after.
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { readTimings, timingKey } from './timings-reporter.ts';

export default class TimingsSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const kept = new Map((readTimings()?.files ?? []).map((t) => [timingKey(t), t.seconds]));
    const seconds = (s: TestSpecification) => kept.get(timingKey({ project: s.project.name, file: path.relative(this.ctx.config.root, s.moduleId) })) ?? Infinity;
    return [...files].sort((a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || seconds(b) - seconds(a));
  }
}
