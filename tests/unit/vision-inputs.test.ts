// Host-side inputs of image prompts (src/engine/vision/inputs.ts) against transformers' numbers.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { mropePositionIds, mropeTable } from '../../src/engine/vision/inputs.ts';
import { ropeTable } from '../../src/engine/rope-table.ts';

const DIR = new URL('../fixtures/transformers-qwen3_5-vl/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as {
  input_ids: number[]; image_grid_thw: [number, number, number][]; position_ids: number[][]; rope_delta: number;
};
const cfg = { imageTokenId: 484, spatialMergeSize: 2 };

describe('M-RoPE position ids (get_rope_index)', () => {
  it('equal the fixture\'s 3×T position ids and rope delta', () => {
    const { positions, delta } = mropePositionIds(expected.input_ids, expected.image_grid_thw, cfg);
    expect(positions).toEqual(expected.position_ids);
    expect(delta).toBe(expected.rope_delta);
  });

  it('two images with text between them (transformers 5.18 get_rope_index output)', () => {
    // ids/grids of a prompt run through transformers' Qwen3_5Model.get_rope_index (image token 300).
    const ids = [5, 17, 301, ...Array(6).fill(300), 302, 40, 41, 42, 301, 300, 302, 60, 61];
    const { positions, delta } = mropePositionIds(ids, [[1, 4, 6], [1, 2, 2]], { imageTokenId: 300, spatialMergeSize: 2 });
    expect(positions).toEqual([
      [0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14],
      [0, 1, 2, 3, 3, 3, 4, 4, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14],
      [0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
    ]);
    expect(delta).toBe(15 - ids.length);
  });

  it('refuses ids and grids that do not match', () => {
    expect(() => mropePositionIds(expected.input_ids, [], cfg)).toThrow(/no image grids/);
    expect(() => mropePositionIds(expected.input_ids.filter((_, i) => i !== 4), expected.image_grid_thw, cfg)).toThrow(/needs 6 image tokens in a row/);
    expect(() => mropePositionIds(expected.input_ids, [...expected.image_grid_thw, [1, 2, 2]], cfg)).toThrow(/2 grid\(s\) given but the ids hold 1 image/);
  });
});

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
