// The M-RoPE table (src/engine/vision/inputs.ts): plain RoPE when t = h = w, per-axis frequencies otherwise.
import { describe, expect, it } from 'vitest';
import { mropeTable } from '../../src/engine/vision/inputs.ts';
import { ropeTable } from '../../src/engine/rope-table.ts';

describe('M-RoPE table', () => {
  it('is the plain RoPE table, bit for bit, when t = h = w (text-only prompts are unchanged)', () => {
    const pos = Array.from({ length: 300 }, (_, i) => i * 7);
    const plain = ropeTable(pos, 64, 1e7);
    expect(mropeTable(pos.map((p) => [p, p, p] as const), 64, 1e7, [11, 11, 10])).toEqual(plain);
  });

  it('takes height for j ≡ 1 and width for j ≡ 2 (mod 3) within their sections, temporal elsewhere', () => {
    const [rd, theta] = [16, 10000];
    const got = mropeTable([[1, 20, 300]], rd, theta, [3, 3, 2]);
    // section [3, 3, 2]: j = 1, 4, 7 → h; j = 2, 5 → w; j = 0, 3, 6 → t
    const axis = [0, 1, 2, 0, 1, 2, 0, 1];
    const byAxis = [ropeTable([1], rd, theta), ropeTable([20], rd, theta), ropeTable([300], rd, theta)];
    for (let j = 0; j < rd / 2; j++) {
      expect([got[2 * j], got[2 * j + 1]]).toEqual([byAxis[axis[j]!]![2 * j], byAxis[axis[j]!]![2 * j + 1]]);
    }
  });
});
