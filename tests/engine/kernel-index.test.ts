import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { INDEX_FILE, renderKernelIndex } from '../../src/engine/kernels/build-index.ts';
import { fillTemplate } from '../../src/engine/recorder.ts';

describe('kernel sources', () => {
  it('kernels/index.ts embeds the current .wgsl files (else run: npx tsx src/engine/kernels/build-index.ts)', () => {
    expect(readFileSync(INDEX_FILE, 'utf8')).toBe(renderKernelIndex());
  });

  it('fills placeholders and names a missing one', () => {
    expect(fillTemplate('k.wgsl', 'const A: bool = {{A}}; const N = {{N}}u;', { A: true, N: 4 })).toBe('const A: bool = true; const N = 4u;');
    expect(() => fillTemplate('k.wgsl', '{{B}}', {})).toThrow(/k\.wgsl.*\{\{B\}\}/);
  });
});
