// Screenshots, only when a reset asked for them: 'pixels' (reset(screenshot=True)) is the wire format
// of OpenEnv's BrowserGymObservation, height × width × 3 nested lists of 0–255, which its client
// accepts; 'png' a `data:image/png;base64,…` URL for viewers that just want to show the page (a
// webgrpo extension: OpenEnv's client wants the list). Both are scaled down to fit `maxSide` (TRL's
// VLM example feeds its model 512-pixel thumbnails): a full 1280 × 720 frame is 2.8 M numbers,
// 13 MB of JSON per reply. The pixels cross from Chromium as one base64 string — as a JS array of
// millions of numbers the transfer took minutes and held the server's event loop.

import type { Page } from 'playwright-core';

/** The longest side of a screenshot unless $BROWSERGYM_SCREENSHOT_MAX_SIDE says otherwise (TRL's --image-size). */
export const DEFAULT_SCREENSHOT_MAX_SIDE = 512;

/** Scales the PNG to fit `maxSide` in Chromium's canvas; returns a PNG data URL or base64 RGB bytes. */
function scaleScript(dataUrl: string, maxSide: number, as: 'png' | 'rgb'): string {
  return `(async () => {
    const img = new Image();
    img.src = ${JSON.stringify(dataUrl)};
    await img.decode();
    const scale = Math.min(1, ${maxSide} / Math.max(img.width, img.height));
    const width = Math.max(1, Math.round(img.width * scale));
    const height = Math.max(1, Math.round(img.height * scale));
    const canvas = document.createElement('canvas');
    canvas.width = width; canvas.height = height;
    const ctx = canvas.getContext('2d');
    ctx.imageSmoothingQuality = 'high';
    ctx.drawImage(img, 0, 0, width, height);
    if (${JSON.stringify(as)} === 'png') return { width, height, data: canvas.toDataURL('image/png') };
    const rgba = ctx.getImageData(0, 0, width, height).data;
    const rgb = new Uint8Array(width * height * 3);
    for (let i = 0, j = 0; i < rgba.length; i += 4) { rgb[j++] = rgba[i]; rgb[j++] = rgba[i + 1]; rgb[j++] = rgba[i + 2]; }
    let binary = '';
    for (let i = 0; i < rgb.length; i += 0x8000) binary += String.fromCharCode.apply(null, rgb.subarray(i, i + 0x8000));
    return { width, height, data: btoa(binary) };
  })()`;
}

export async function screenshot(page: Page, mode: 'pixels' | 'png', maxSide: number): Promise<string | number[][][]> {
  const png = await page.screenshot({ type: 'png' });
  const dataUrl = `data:image/png;base64,${png.toString('base64')}`;
  // Chromium decodes and scales its own PNG, in a scratch page of the session's (routed) context.
  const scratch = await page.context().newPage();
  try {
    const { width, height, data } = (await scratch.evaluate(scaleScript(dataUrl, maxSide, mode === 'png' ? 'png' : 'rgb'))) as { width: number; height: number; data: string };
    if (mode === 'png') return data;
    const rgb = Buffer.from(data, 'base64');
    const rows: number[][][] = new Array(height);
    for (let y = 0; y < height; y++) {
      const row: number[][] = new Array(width);
      for (let x = 0; x < width; x++) {
        const i = (y * width + x) * 3;
        row[x] = [rgb[i]!, rgb[i + 1]!, rgb[i + 2]!];
      }
      rows[y] = row;
    }
    return rows;
  } finally {
    await scratch.close();
  }
}
