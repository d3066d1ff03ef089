// transformers' Qwen2-VL smart_resize: the size an image is resized to before patching — both sides
// multiples of `factor` (patch·merge), the area within [minPixels, maxPixels], the aspect ratio kept.

/** Python's round(): half to even (round(1.5) = 2, round(2.5) = 2). */
function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

export function smartResize(height: number, width: number, factor: number, minPixels: number, maxPixels: number): [number, number] {
  if (!(height > 0 && width > 0)) throw new Error(`image size must be positive, got ${height}×${width}`);
  const ratio = Math.max(height, width) / Math.min(height, width);
  if (ratio > 200) throw new Error(`absolute aspect ratio must be smaller than 200, got ${ratio}`);
  let h = roundHalfEven(height / factor) * factor;
  let w = roundHalfEven(width / factor) * factor;
  if (h * w > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return [h, w];
}
