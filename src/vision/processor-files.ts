// A checkpoint's image processor config, from the files transformers writes beside the weights. No
// file system here: the checkpoint hands over its files' text (readText), so the same reader serves
// the CLI (a folder on disk) and the app's worker (a picked folder, the Hub cache).
//
// Typed by what it reads, not by src/model's OpenedCheckpoint: any opened checkpoint fits, and the
// vision layer keeps importing the engine's types only (tests/unit/import-cycles.test.ts, LAYERS).

import { parseImageProcessorConfig, type ImageProcessorConfig } from './image-processor.ts';

/** Processor config files as transformers writes them (newest first). */
export const PROCESSOR_FILES = ['processor_config.json', 'preprocessor_config.json'] as const;

/** What the reader needs of an opened checkpoint (src/model's OpenedCheckpoint has it). */
export interface ProcessorSource {
  /** Where it was opened from, for errors. */
  location: string;
  config: {
    vision: { patchSize: number; temporalPatchSize: number; spatialMergeSize: number } | null;
    visionError?: string;
  };
  readText(file: string): Promise<string | null>;
}

/** The checkpoint's image processor config, checked against its vision_config (`what` names the caller in errors). */
export async function loadImageProcessor(ckpt: ProcessorSource, what: string): Promise<ImageProcessorConfig> {
  const vision = ckpt.config.vision;
  if (!vision) throw new Error(ckpt.config.visionError ? `${what}: ${ckpt.config.visionError}` : `${what}: ${ckpt.location} has no vision_config (not a vision-language model)`);
  let processor = null;
  for (const name of PROCESSOR_FILES) {
    const found = await ckpt.readText(name);
    if (found !== null) {
      const where = `${ckpt.location}/${name}`;
      let json: unknown;
      try {
        json = JSON.parse(found);
      } catch (err) {
        throw new Error(`${where} is not valid JSON: ${(err as Error).message}`);
      }
      processor = parseImageProcessorConfig(json, where);
      break;
    }
  }
  if (!processor) throw new Error(`${what}: ${ckpt.location} has no ${PROCESSOR_FILES.join(' or ')}`);
  if (processor.patchSize !== vision.patchSize || processor.temporalPatchSize !== vision.temporalPatchSize || processor.mergeSize !== vision.spatialMergeSize) {
    throw new Error(`${what}: the processor's patch ${processor.patchSize}, temporal ${processor.temporalPatchSize}, merge ${processor.mergeSize} differ from vision_config's ${vision.patchSize}, ${vision.temporalPatchSize}, ${vision.spatialMergeSize}`);
  }
  return processor;
}
