// The model whose logits tests/reference/golden/numpy-logits.json pins: weights come from the
// seeded generator, so only the logits are stored.

import { randomRefLora, randomRefWeights } from '../../../src/engine/reference/weights.ts';
import { tinyConfig } from '../tiny-config.ts';

export const GOLDEN_CONFIG = tinyConfig({ ropeTheta: 1_000_000 });
export const GOLDEN_IDS = [3, 17, 5, 29, 11, 3, 36, 0, 22];
export const goldenWeights = () => randomRefWeights(GOLDEN_CONFIG, 77);
export const goldenLora = () => randomRefLora(GOLDEN_CONFIG, { r: 2, alpha: 5, targets: ['q_proj', 'o_proj', 'down_proj'], seed: 78 });
