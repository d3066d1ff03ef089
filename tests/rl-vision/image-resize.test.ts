// TRL's screenshot resizing (PIL's thumbnail with LANCZOS) against Pillow's own output
// (tests/fixtures/pil-thumbnail/make.py): the sizes it picks and the pixels, byte for byte.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { thumbnail, thumbnailSize } from '../../src/rl/rollout/image-resize.ts';
import type { RolloutImage } from '../../src/rl/rollout/images.ts';

interface Case { width: number; height: number; size: number; rgb: string; out_width: number; out_height: number; out_rgb: string }
const fixture = JSON.parse(readFileSync(new URL('../fixtures/pil-thumbnail/thumbnails.json', import.meta.url), 'utf8')) as {
  cases: Case[];
  sizes: { width: number; height: number; size: number; out: [number, number] }[];
};

function fromRgb(width: number, height: number, b64: string): RolloutImage {
  const rgb = Buffer.from(b64, 'base64');
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) rgba.set([rgb[3 * i]!, rgb[3 * i + 1]!, rgb[3 * i + 2]!, 255], 4 * i);
  return { width, height, rgba };
}

describe('PIL thumbnail(LANCZOS)', () => {
  it("picks Pillow's sizes (aspect rounding, never enlarging)", () => {
    for (const s of fixture.sizes) {
      expect(thumbnailSize(s.width, s.height, s.size) ?? [s.width, s.height], `${s.width}x${s.height} in ${s.size}`).toEqual(s.out);
    }
  });

  it("equals Pillow's pixels", () => {
    for (const c of fixture.cases) {
      const out = thumbnail(fromRgb(c.width, c.height, c.rgb), c.size);
      expect([out.width, out.height]).toEqual([c.out_width, c.out_height]);
      expect(Buffer.from(out.rgba).equals(Buffer.from(fromRgb(c.out_width, c.out_height, c.out_rgb).rgba)), `${c.width}x${c.height} → ${c.size}`).toBe(true);
    }
  });

  it('refuses a box that is not a positive integer', () => {
    expect(() => thumbnailSize(10, 10, 0)).toThrow(/positive integer/);
  });
});
