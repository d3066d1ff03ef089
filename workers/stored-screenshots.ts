// What a run keeps of its rollouts' screenshots: each one scaled down to fit STORED_SIDE pixels (PIL's
// thumbnail, as the task itself scales: TRL's 512-pixel screenshots are kept as the model saw them)
// and stored as a PNG data URL, within a byte budget per step
// and per run, so a long screenshot run stays within the run store's request and storage limits.
// Past a budget a screenshot is counted but not kept (the viewer says how many were left out).

import { thumbnail } from '../src/rl/rollout/image-resize.ts';
import type { RolloutImage } from '../src/rl/rollout/images.ts';
import { pngDataUrl } from './png.ts';

/** Longest side of a kept screenshot (the viewer's thumbnails and its enlarged view). */
export const STORED_SIDE = 512;
/** Data URL characters kept per step (the run store takes at most 16 MiB per step request). */
export const STEP_SCREENSHOT_CHARS = 4 * 1024 * 1024;
/** Data URL characters kept per run. */
export const RUN_SCREENSHOT_CHARS = 32 * 1024 * 1024;

export interface StoredImage {
  /** `data:image/png;base64,…` */
  src: string;
  width: number;
  height: number;
}

/** One run's budget (the trainer makes one per run); `step()` starts a step's own. */
export class ScreenshotBudget {
  private runLeft: number;
  private stepLeft = 0;

  constructor(
    private readonly perStep = STEP_SCREENSHOT_CHARS,
    perRun = RUN_SCREENSHOT_CHARS,
  ) {
    this.runLeft = perRun;
  }

  step(): void {
    this.stepLeft = this.perStep;
  }

  /** The image as kept, or null when it does not fit what is left. */
  keep(image: RolloutImage): StoredImage | null {
    const small = thumbnail(image, STORED_SIDE);
    const src = pngDataUrl(small);
    if (src.length > this.stepLeft || src.length > this.runLeft) return null;
    this.stepLeft -= src.length;
    this.runLeft -= src.length;
    return { src, width: small.width, height: small.height };
  }
}
