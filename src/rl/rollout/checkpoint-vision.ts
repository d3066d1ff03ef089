// A checkpoint's images for rollouts: a vision-language checkpoint (config.vision) gets its processor
// (processor_config.json) and image placeholder; a text model, or one whose vision_config cannot be
// used (config.visionError), gets none and trains on text. The CLI's `train` and the app's worker
// both start runs from here, so a VL checkpoint reads screenshots in both.

import type { OpenedCheckpoint } from '../../model/checkpoint.ts';
import { loadImageProcessor } from '../../vision/processor-files.ts';
import { rolloutVision, type RolloutVision } from './rollout-images.ts';

/** The run's RolloutVision for `ckpt`, or undefined for a text-only model (`what` names the caller in errors). */
export async function checkpointVision(ckpt: OpenedCheckpoint, what: string): Promise<RolloutVision | undefined> {
  const vision = ckpt.config.vision;
  return vision ? rolloutVision(await loadImageProcessor(ckpt, what), vision.imageTokenId) : undefined;
}
