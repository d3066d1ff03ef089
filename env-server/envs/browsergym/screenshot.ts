// Screenshots, only when a reset asked for them (each one is megabytes of JSON): 'pixels' is the
// wire format of OpenEnv's BrowserGymObservation (height × width × 3 nested lists of 0–255),
// 'png' a `data:image/png;base64,…` URL for viewers that just want to show the page.

import type { Page } from 'playwright-core';

export async function screenshotPixels(page: Page, mode: 'pixels' | 'png'): Promise<unknown> {
  const png = await page.screenshot({ type: 'png' });
  const dataUrl = `data:image/png;base64,${png.toString('base64')}`;
  if (mode === 'png') return dataUrl;
  // Chromium decodes its own PNG: draw it on a canvas in a scratch page and read the RGBA back.
  const scratch = await page.context().newPage();
  try {
    const { width, height, rgba } = (await scratch.evaluate(`(async () => {
      const img = new Image();
      img.src = ${JSON.stringify(dataUrl)};
      await img.decode();
      const canvas = document.createElement('canvas');
      canvas.width = img.width; canvas.height = img.height;
      const ctx = canvas.getContext('2d');
      ctx.drawImage(img, 0, 0);
      return { width: img.width, height: img.height, rgba: Array.from(ctx.getImageData(0, 0, img.width, img.height).data) };
    })()`)) as { width: number; height: number; rgba: number[] };
    const rows: number[][][] = [];
    for (let y = 0; y < height; y++) {
      const row: number[][] = [];
      for (let x = 0; x < width; x++) {
        const i = (y * width + x) * 4;
        row.push([rgba[i]!, rgba[i + 1]!, rgba[i + 2]!]);
      }
      rows.push(row);
    }
    return rows;
  } finally {
    await scratch.close();
  }
}
