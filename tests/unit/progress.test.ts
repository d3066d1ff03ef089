// The CLI's stderr progress: durations, ETA from the rate so far, and the log (non-TTY) throttle.

import { describe, expect, it } from 'vitest';
import { eta, formatDuration, Progress } from '../../src/cli/progress.ts';

function fakeStream(isTTY: boolean): { stream: NodeJS.WriteStream; text: () => string } {
  let out = '';
  const stream = { isTTY, write: (s: string) => ((out += s), true) } as unknown as NodeJS.WriteStream;
  return { stream, text: () => out };
}

describe('CLI progress', () => {
  it('formats durations and estimates the time left from the rate so far', () => {
    expect(formatDuration(0)).toBe('0:00');
    expect(formatDuration(65)).toBe('1:05');
    expect(formatDuration(3 * 3600 + 7 * 60 + 9)).toBe('3:07:09');
    expect(formatDuration(NaN)).toBe('?');
    expect(eta(30, 3, 10)).toBe(70);
    expect(eta(30, 0, 10)).toBeNull();
    expect(eta(30, 10, 10)).toBe(0);
  });

  it('in a log: the first update and the last are written, the ones between are throttled', () => {
    const { stream, text } = fakeStream(false);
    const task = new Progress(stream, 60_000).task('loading', 4);
    for (let i = 1; i <= 4; i++) task.update(i, `item ${i}`);
    task.end();
    const lines = text().trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^loading: 1\/4 \(25%\), \d+:\d\d elapsed, ETA \d+:\d\d — item 1$/);
    expect(lines[1]).toMatch(/^loading: 4\/4 \(100%\)/);
    expect(lines[2]).toMatch(/^loading: done in \d+:\d\d$/);
  });

  it('on a terminal: one status line redrawn in place, cleared before a message', () => {
    const { stream, text } = fakeStream(true);
    const p = new Progress(stream);
    const task = p.task('SFT warm-up', 2);
    task.update(1);
    p.line('note');
    expect(text()).toMatch(/^\rSFT warm-up: 1\/2 \(50%\)[^\n]*\x1b\[K\r\x1b\[Knote\n$/);
  });
});
