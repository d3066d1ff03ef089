// TRL's vision-language BrowserGym example (examples/scripts/openenv/browsergym.py, `BrowserGymVLMEnv`;
// specs/browsergym.md §6.7–§6.8): the text example's five tools and reward, with a system prompt that
// announces screenshots, tools documented as returning "the updated page observation with
// screenshot", and every tool result a list of content blocks — the page's screenshot, scaled with
// PIL's thumbnail(LANCZOS) to fit `--image-size` (default 512; 0 keeps the frame as sent), then the
// formatted text. The reset observation stays text (appended to the prompt) and has no Error part.
// Action strings are repr-quoted as on TRL's PR branch: main's bare single quotes break on a quote
// in the text (§6.8).
//
// Screenshots: OpenEnv's Space sends one with every observation (full frame); /envs/browsergym
// sends them when the reset asks (`screenshot: true`, already scaled by Chromium to its
// BROWSERGYM_SCREENSHOT_MAX_SIDE, 512 by default), and the Space's server drops that unknown kwarg.

import type { StepResult } from '../../../openenv/index.ts';
import { thumbnail } from '../../rollout/image-resize.ts';
import { imageFromRgbRows, type ContentBlock } from '../../rollout/images.ts';
import type { ToolDeclaration } from '../../rollout/schema.ts';
import { BROWSERGYM_TOOLS, BrowserGymToolEnv, formatObservation, type BrowserGymEnvOptions } from './browsergym.ts';
import type { OpenEpisode } from './episode-session.ts';

export const BROWSERGYM_VLM_SYSTEM_PROMPT = `You control a web browser to complete tasks.

The page structure shows elements as: [bid] element_type 'element_text'
For example: [13] button 'Click Me!' means the element has bid='13'.

You will see a screenshot of the page after each action. Use the visual information
along with the page structure to decide your next action.

Use the available tools to interact with the page:
- click: Click an element by its bid
- fill: Fill an input field with text
- send_keys: Send keyboard input
- scroll: Scroll the page
- noop: Do nothing

Complete the given task as efficiently as possible.`;

/** TRL's `--image-size` default: screenshots are thumbnailed to fit this square. */
export const BROWSERGYM_VLM_IMAGE_SIZE = 512;

// The methods are annotated `-> list` (get_json_schema: {"type": "array"}) and their Returns: text ends "with screenshot.".
export const BROWSERGYM_VLM_TOOLS: ToolDeclaration[] = BROWSERGYM_TOOLS.map((t) => ({
  ...t,
  returns: { type: { array: null }, description: t.returns!.description!.replace(/\.$/, ' with screenshot.') },
}));

export interface BrowserGymVlmOptions extends BrowserGymEnvOptions {
  /** TRL's `--image-size`: the thumbnail box; 0 keeps screenshots as the server sent them. */
  imageSize?: number;
}

export class BrowserGymVlmToolEnv extends BrowserGymToolEnv {
  override readonly tools = this.toolsWith(BROWSERGYM_VLM_TOOLS);
  private readonly imageSize: number;

  constructor(baseUrl: string, open: OpenEpisode, options: BrowserGymVlmOptions = {}) {
    super(baseUrl, open, options);
    const size = options.imageSize ?? BROWSERGYM_VLM_IMAGE_SIZE;
    if (!(Number.isInteger(size) && size >= 0)) throw new Error(`browsergym-vlm: imageSize must be an integer ≥ 0, got ${size}`);
    this.imageSize = size;
  }

  protected override resetKwargs(taskName: string): Record<string, unknown> {
    return { ...super.resetKwargs(taskName), screenshot: true };
  }

  protected override resetObservation(result: StepResult): string {
    return this.record(formatObservation(result.observation, false));
  }

  /** TRL's `_format_observation_multimodal`: the screenshot (if any), then the text. */
  protected override stepObservation(result: StepResult): ContentBlock[] {
    const content: ContentBlock[] = [];
    const shot = imageFromRgbRows(result.observation.screenshot);
    if (shot) content.push({ type: 'image', image: this.imageSize > 0 ? thumbnail(shot, this.imageSize) : shot });
    content.push({ type: 'text', text: this.record(formatObservation(result.observation)) });
    return content;
  }
}
