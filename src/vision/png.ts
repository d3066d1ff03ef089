// PNG → 8-bit RGB (what PIL's Image.open(…).convert('RGB') gives for the PNGs screenshots are):
// 8-bit grey, grey+alpha, RGB, RGBA and palette images, non-interlaced. Alpha is dropped, not
// composited (PIL's RGBA → RGB conversion does the same). Inflate by fflate (package.json).

import { unzlibSync } from 'fflate';

export interface RgbImage {
  width: number;
  height: number;
  /** (height, width, 3) row-major. */
  rgb: Uint8Array;
}

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

export function decodePng(bytes: Uint8Array, name = 'image'): RgbImage {
  const fail = (msg: string): never => { throw new Error(`${name}: ${msg}`); };
  if (bytes.length < 8 || SIGNATURE.some((v, i) => bytes[i] !== v)) fail('not a PNG file (only PNG images are supported)');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let width = 0, height = 0, depth = 0, colorType = -1;
  let palette: Uint8Array | null = null;
  const idat: Uint8Array[] = [];
  for (let at = 8; at + 8 <= bytes.length;) {
    const len = view.getUint32(at);
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    if (at + 12 + len > bytes.length) fail(`chunk ${type} runs past the end of the file`);
    const data = bytes.subarray(at + 8, at + 8 + len);
    if (type === 'IHDR') {
      width = view.getUint32(at + 8);
      height = view.getUint32(at + 12);
      [depth, colorType] = [data[8]!, data[9]!];
      if (data[12] !== 0) fail('interlaced PNGs are not supported');
    } else if (type === 'PLTE') palette = data;
    else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    at += 12 + len;
  }
  const channels = CHANNELS[colorType];
  if (!width || !height || channels === undefined) fail(`no valid IHDR (size ${width}×${height}, color type ${colorType})`);
  if (depth !== 8) fail(`bit depth ${depth} is not supported (8-bit PNGs only)`);
  if (colorType === 3 && !palette) fail('palette image without a PLTE chunk');
  if (width * height > 64 * 1024 * 1024) fail(`${width}×${height} is too large`);
  const joined = new Uint8Array(idat.reduce((a, d) => a + d.length, 0));
  idat.reduce((off, d) => { joined.set(d, off); return off + d.length; }, 0);
  let raw: Uint8Array;
  try {
    raw = unzlibSync(joined);
  } catch (err) {
    return fail(`image data does not inflate: ${(err as Error).message}`);
  }
  const stride = width * channels!;
  if (raw.length < height * (stride + 1)) fail(`image data holds ${raw.length} bytes, ${height * (stride + 1)} needed`);
  const px = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = px.subarray(y * stride, (y + 1) * stride);
    const prev = y > 0 ? px.subarray((y - 1) * stride, y * stride) : null;
    for (let i = 0; i < stride; i++) {
      const a = i >= channels! ? row[i - channels!]! : 0;
      const b = prev ? prev[i]! : 0;
      const c = prev && i >= channels! ? prev[i - channels!]! : 0;
      const predictor = filter === 0 ? 0 : filter === 1 ? a : filter === 2 ? b : filter === 3 ? (a + b) >> 1 : filter === 4 ? paeth(a, b, c) : fail(`row ${y} has unknown filter type ${filter}`);
      row[i] = (src[i]! + predictor) & 0xff;
    }
  }
  const rgb = new Uint8Array(width * height * 3);
  for (let p = 0; p < width * height; p++) {
    if (colorType === 2 || colorType === 6) rgb.set(px.subarray(p * channels!, p * channels! + 3), p * 3);
    else if (colorType === 3) {
      const k = px[p]! * 3;
      if (k + 3 > palette!.length) fail(`palette index ${px[p]} is outside the ${palette!.length / 3}-colour palette`);
      rgb.set(palette!.subarray(k, k + 3), p * 3);
    } else rgb.fill(px[p * channels!]!, p * 3, p * 3 + 3);
  }
  return { width, height, rgb };
}
