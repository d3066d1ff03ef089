// Regenerating the numpy golden logits (only needed if the seeded weight generator changes):
//   npx tsx tests/reference/golden/dump-golden-case.ts > /tmp/golden-case.json
//   python3 tests/reference/golden/numpy_forward.py /tmp/golden-case.json > tests/reference/golden/numpy-logits.json

import { GOLDEN_CONFIG, GOLDEN_IDS, goldenLora, goldenWeights } from './golden-case.ts';

const toObject = (m: Map<string, Float64Array>) => Object.fromEntries([...m].map(([k, v]) => [k, Array.from(v)]));
const lora = goldenLora();
process.stdout.write(
  JSON.stringify({
    cfg: GOLDEN_CONFIG,
    ids: GOLDEN_IDS,
    w: toObject(goldenWeights()),
    lora: { r: lora.r, alpha: lora.alpha, A: toObject(lora.A), B: toObject(lora.B) },
  }),
);
