import { describe, expect, it } from 'vitest';
import {
  decodeToFloat32, encodeFromFloat32, exceedsF16Range, floatToBf16, floatToHalf, halfToFloat, MAX_HEADER_BYTES, MAX_TENSORS,
  parseSafetensors, writeSafetensors,
} from '../../src/model/safetensors.ts';

/** A file with a hand-written header (no validation on the way in). */
function rawFile(header: unknown, bufferBytes: number, pad = true): Uint8Array {
  let json = typeof header === 'string' ? header : JSON.stringify(header);
  if (pad) json = json.padEnd(Math.ceil(json.length / 8) * 8, ' ');
  const h = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + h.byteLength + bufferBytes);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.byteLength), true);
  out.set(h, 8);
  return out;
}

describe('safetensors header', () => {
  it('writes a padded header that parses back (8-aligned buffer, metadata first, offsets relative to the buffer)', () => {
    const a = encodeFromFloat32('F32', new Float32Array([1, 2, 3, 4, 5, 6]));
    const b = encodeFromFloat32('BF16', new Float32Array([0.5, -2]));
    const file = writeSafetensors([
      { name: 'a', dtype: 'F32', shape: [2, 3], data: a },
      { name: 'b', dtype: 'BF16', shape: [2], data: b },
      { name: 'empty', dtype: 'F16', shape: [0, 4], data: new Uint8Array(0) },
      { name: 'scalar', dtype: 'F32', shape: [], data: encodeFromFloat32('F32', new Float32Array([7])) },
    ]);
    const n = Number(new DataView(file.buffer).getBigUint64(0, true));
    expect((8 + n) % 8).toBe(0);
    const headerText = new TextDecoder().decode(file.subarray(8, 8 + n));
    expect(headerText.startsWith('{"__metadata__":{"format":"pt"}')).toBe(true);
    expect(headerText.endsWith(' ') || headerText.endsWith('}')).toBe(true);
    const parsed = parseSafetensors(file);
    expect(parsed.metadata).toEqual({ format: 'pt' });
    const byName = new Map(parsed.tensors.map((t) => [t.name, t]));
    expect(byName.get('a')).toMatchObject({ dtype: 'F32', shape: [2, 3], byteLength: 24, fileOffset: 8 + n });
    expect(byName.get('b')).toMatchObject({ dtype: 'BF16', byteLength: 4, fileOffset: 8 + n + 24 });
    expect(byName.get('empty')!.byteLength).toBe(0);
    expect(byName.get('scalar')!.byteLength).toBe(4);
    const t = byName.get('a')!;
    expect([...decodeToFloat32(t, file.subarray(t.fileOffset, t.fileOffset + t.byteLength))]).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('pads a 158-byte JSON header to 160 bytes', () => {
    // Tensor name length chosen so the JSON is exactly 158 bytes.
    const probe = (name: string) => JSON.stringify({ __metadata__: { format: 'pt' }, [name]: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }).length;
    const name = 'x'.repeat(158 - probe(''));
    expect(probe(name)).toBe(158);
    const file = writeSafetensors([{ name, dtype: 'F32', shape: [1], data: new Uint8Array(4) }]);
    expect(Number(new DataView(file.buffer).getBigUint64(0, true))).toBe(160);
    expect(file[8 + 158]).toBe(0x20);
    expect(file[8 + 159]).toBe(0x20);
  });

  const entry = { dtype: 'F32', shape: [2], data_offsets: [0, 8] };
  const failures: [string, Uint8Array, RegExp][] = [
    ['file shorter than 8 bytes', new Uint8Array(5), /shorter than the 8-byte header length/],
    ['N beyond the file', (() => { const f = rawFile({ t: entry }, 8); new DataView(f.buffer).setBigUint64(0, 10_000n, true); return f; })(), /runs past the end of the file/],
    ['N above the header cap', (() => { const f = rawFile({ t: entry }, 8); new DataView(f.buffer).setBigUint64(0, BigInt(MAX_HEADER_BYTES + 1), true); return f; })(), new RegExp(`exceeds webgrpo's ${MAX_HEADER_BYTES}-byte limit`)],
    ['more tensors than the cap', rawFile(Object.fromEntries(Array.from({ length: MAX_TENSORS + 1 }, (_, i) => [`t${i}`, { dtype: 'F32', shape: [0], data_offsets: [0, 0] }])), 0), new RegExp(`lists ${MAX_TENSORS + 1} tensors, over webgrpo's limit of ${MAX_TENSORS}`)],
    ['invalid JSON', rawFile('{"t": {', 8), /not valid JSON/],
    ['a JSON array', rawFile('[1, 2]', 8), /not a JSON object/],
    ['an unsupported dtype', rawFile({ t: { dtype: 'I64', shape: [1], data_offsets: [0, 8] } }, 8), /tensor 't': dtype I64 is not supported/],
    ['an unknown dtype', rawFile({ t: { dtype: 'Q4', shape: [1], data_offsets: [0, 8] } }, 8), /tensor 't': unknown dtype 'Q4'/],
    ['a bad shape', rawFile({ t: { dtype: 'F32', shape: [-1], data_offsets: [0, 8] } }, 8), /shape must be an array of non-negative integers/],
    ['bytes not matching the shape', rawFile({ t: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, 8), /span 8 bytes but shape \[3\] × F32 needs 12/],
    ['offsets past the buffer', rawFile({ t: { dtype: 'F32', shape: [4], data_offsets: [0, 16] } }, 8), /run past the byte buffer \(8 bytes\)/],
    ['overlapping tensors', rawFile({ t: entry, u: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, 8), /tensor '.' data_offsets .* overlap/],
    ['a hole', rawFile({ t: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, 8), /hole in the byte buffer/],
    ['trailing bytes', rawFile({ t: entry }, 12), /trailing bytes/],
    ['duplicate keys', rawFile('{"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', 8), /duplicate key 't'/],
    ['non-string metadata', rawFile({ __metadata__: { step: 3 }, t: entry }, 8), /__metadata__.step must be a string/],
  ];
  for (const [what, file, message] of failures) {
    it(`rejects ${what}, naming the file`, () => {
      expect(() => parseSafetensors(file, 'bad.safetensors')).toThrow(message);
      expect(() => parseSafetensors(file, 'bad.safetensors')).toThrow(/^bad\.safetensors/);
    });
  }

  it('refuses to write a tensor whose bytes do not match its shape', () => {
    expect(() => writeSafetensors([{ name: 'w', dtype: 'F16', shape: [3], data: new Uint8Array(4) }])).toThrow(/tensor 'w' has 4 bytes but shape \[3\] × F16 needs 6/);
  });
});

describe('dtype conversion', () => {
  it('decodes bf16 exactly as the top half of an f32', () => {
    const values = new Float32Array([1, -2.5, 3.140625, 0, -0, 1.5 * 2 ** 100, 2 ** -130, Infinity, -Infinity]);
    const round = decodeToFloat32({ name: 'x', dtype: 'BF16' }, encodeFromFloat32('BF16', values));
    expect([...round]).toEqual([...values]);
  });

  it('rounds to nearest even when encoding bf16 and f16', () => {
    // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties go to the even mantissa (1).
    expect(floatToBf16(1 + 2 ** -8)).toBe(0x3f80);
    // 1 + 3·2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): rounds up.
    expect(floatToBf16(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(floatToBf16(1 + 2 ** -8 + 2 ** -20)).toBe(0x3f81);
    expect(floatToHalf(1 + 2 ** -11)).toBe(0x3c00);
    expect(floatToHalf(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(floatToHalf(65504)).toBe(0x7bff);
    expect(floatToHalf(65520)).toBe(0x7c00); // rounds up to infinity
    expect(floatToHalf(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(floatToHalf(2 ** -25)).toBe(0x0000); // tie with 0 goes to even
    expect(floatToHalf(3 * 2 ** -25)).toBe(0x0002);
    expect(floatToHalf(-0)).toBe(0x8000);
    expect(Number.isNaN(halfToFloat(floatToHalf(NaN)))).toBe(true);
    expect(Number.isNaN(decodeToFloat32({ name: 'x', dtype: 'BF16' }, encodeFromFloat32('BF16', new Float32Array([NaN])))[0])).toBe(true);
  });

  it('round-trips every finite f16 value exactly', () => {
    const bits = new Uint16Array(0x10000);
    for (let i = 0; i < bits.length; i++) bits[i] = i;
    const bytes = new Uint8Array(bits.buffer);
    const f32 = decodeToFloat32({ name: 'all', dtype: 'F16' }, bytes);
    const back = new Uint16Array(encodeFromFloat32('F16', f32).buffer);
    const mismatches: number[] = [];
    for (let i = 0; i < bits.length; i++) {
      const isNaN = (i & 0x7c00) === 0x7c00 && (i & 0x3ff) !== 0;
      if (!isNaN && back[i] !== i) mismatches.push(i);
    }
    expect(mismatches).toEqual([]);
    expect(halfToFloat(0x3555)).toBeCloseTo(0.333251953125, 12);
    expect(halfToFloat(0x0400)).toBe(2 ** -14);
    expect(halfToFloat(0x03ff)).toBe(1023 * 2 ** -24);
    expect(halfToFloat(0xfc00)).toBe(-Infinity);
  });

  it('keeps f16 and bf16 errors within half an ulp on random values', () => {
    const values = new Float32Array(2000).map((_, i) => Math.sin(i * 12.9898) * 10 ** ((i % 7) - 3));
    for (const [dtype, bits] of [['F16', 10], ['BF16', 7]] as const) {
      const back = decodeToFloat32({ name: 'r', dtype }, encodeFromFloat32(dtype, values));
      for (let i = 0; i < values.length; i++) {
        const v = values[i]!;
        if (dtype === 'F16' && Math.abs(v) < 2 ** -14) continue; // subnormal range: absolute error instead
        const ulp = 2 ** (Math.floor(Math.log2(Math.abs(v))) - bits);
        expect(Math.abs(back[i]! - v)).toBeLessThanOrEqual(ulp / 2);
      }
    }
  });

  it('flags values that f16 cannot hold (bf16 checkpoints may have them)', () => {
    expect(exceedsF16Range(new Float32Array([1, -65504, 0.5]))).toBe(false);
    expect(exceedsF16Range(new Float32Array([1, -70000]))).toBe(true);
    expect(exceedsF16Range(decodeToFloat32({ name: 'b', dtype: 'BF16' }, encodeFromFloat32('BF16', new Float32Array([2 ** 20]))))).toBe(true);
  });

  it('rejects bytes that are not a whole number of values', () => {
    expect(() => decodeToFloat32({ name: 'odd', dtype: 'F32' }, new Uint8Array(6))).toThrow(/tensor 'odd': 6 bytes is not a whole number of F32 values/);
  });
});
