// Images in a conversation, in TRL's list-of-content-blocks form: a multimodal tool returns
// `[{type: 'image', image}, {type: 'text', text}]` (TRL's BrowserGymVLMEnv hands a PIL image; here an
// RGBA pixel buffer with its size). The chat template only needs to know that a block is an image —
// Qwen3.5's renders `<|vision_start|><|image_pad|><|vision_end|>` for each — so templates are given
// payload-free stand-ins: handing a template millions of pixel values costs seconds per render.

/** An image's pixels: row-major RGBA, 4 bytes a pixel. */
export interface RolloutImage {
  width: number;
  height: number;
  rgba: Uint8Array;
}

export interface ImageBlock {
  type: 'image';
  image: RolloutImage;
}

export interface TextBlock {
  type: 'text';
  text: string;
}

export type ContentBlock = ImageBlock | TextBlock;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function isRolloutImage(v: unknown): v is RolloutImage {
  return isObject(v) && Number.isInteger(v.width) && Number.isInteger(v.height) && (v.width as number) > 0 && (v.height as number) > 0
    && v.rgba instanceof Uint8Array && v.rgba.length === (v.width as number) * (v.height as number) * 4;
}

export function isImageBlock(v: unknown): v is ImageBlock {
  return isObject(v) && v.type === 'image' && isRolloutImage(v.image);
}

/** The images of a message's content, in order (none for string content). */
export function contentImages(content: unknown): RolloutImage[] {
  return Array.isArray(content) ? content.filter(isImageBlock).map((b) => b.image) : [];
}

/** The text blocks of a message's content joined by newlines (string content as it is). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.flatMap((b) => (isObject(b) && b.type === 'text' && typeof b.text === 'string' ? [b.text] : [])).join('\n');
}

/** Content with each image block replaced by `{type: 'image'}`: what a chat template reads of it. */
export function templateContent<T>(content: T): T {
  if (!Array.isArray(content)) return content;
  return content.map((b) => (isImageBlock(b) ? { type: 'image' } : b)) as T;
}

/**
 * OpenEnv's BrowserGymObservation `screenshot` (height × width × 3 nested lists of 0–255, what
 * `np.array(screenshot, dtype=np.uint8)` reads) as RGBA pixels; null for a missing screenshot.
 * A malformed one is an error naming what is wrong.
 */
export function imageFromRgbRows(rows: unknown): RolloutImage | null {
  if (rows === null || rows === undefined) return null;
  if (!Array.isArray(rows) || rows.length === 0) throw new Error('screenshot: expected a non-empty list of pixel rows');
  const height = rows.length;
  const width = Array.isArray(rows[0]) ? rows[0].length : 0;
  if (width === 0) throw new Error('screenshot: row 0 is not a non-empty list of pixels');
  const rgba = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    const row = rows[y];
    if (!Array.isArray(row) || row.length !== width) throw new Error(`screenshot: row ${y} has ${Array.isArray(row) ? row.length : 'no'} pixels, row 0 has ${width}`);
    for (let x = 0; x < width; x++) {
      const px = row[x];
      if (!Array.isArray(px) || px.length !== 3) throw new Error(`screenshot: pixel (${x}, ${y}) is not an [r, g, b] triple`);
      const o = (y * width + x) * 4;
      for (let c = 0; c < 3; c++) {
        const v = px[c];
        if (!(Number.isInteger(v) && v >= 0 && v <= 255)) throw new Error(`screenshot: pixel (${x}, ${y}) has channel value ${JSON.stringify(v)}, not an integer 0–255`);
        rgba[o + c] = v;
      }
      rgba[o + 3] = 255;
    }
  }
  return { width, height, rgba };
}
