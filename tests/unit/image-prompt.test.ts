// `score --image`'s prompt against the fixture's processor output (input_ids, M-RoPE position ids).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { imagePrompt } from '../../src/cli/image-prompt.ts';
import { loadCheckpointTokenizer } from '../../src/model/tokenizer.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';

const DIR = new URL('../fixtures/transformers-qwen3_5-vl/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as {
  messages: { content: { type: string; text?: string }[] }[]; input_ids: number[]; image_grid_thw: [number, number, number][]; position_ids: number[][];
};

describe('image prompt', () => {
  it('renders one user message (image, then text) to the processor\'s ids and position ids', async () => {
    const tokenizer = await loadCheckpointTokenizer(nodeFolderFiles(DIR), DIR);
    const text = expected.messages[0]!.content.find((c) => c.type === 'text')!.text!;
    const got = imagePrompt(tokenizer, text, expected.image_grid_thw[0]!, { imageTokenId: 484, spatialMergeSize: 2 });
    expect(got.ids).toEqual(expected.input_ids);
    expect(got.positions).toEqual(expected.position_ids);
    expect(got.offsets).toEqual([expected.input_ids.indexOf(484)]);
  });
});
