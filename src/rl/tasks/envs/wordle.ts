// TextArena's game log (Wordle's, Sudoku's): the server's observation is the cumulative log in its one
// message (sudoku-task.ts reads it; examples/wordle.mjs reads it the same way).

import type { StepResult } from '../../../openenv/index.ts';

/** The whole game log: the content of the observation's single message. */
export function wordleLog(result: StepResult): string {
  const messages = result.observation.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw new Error('wordle observation has no messages');
  const content = (messages[0] as { content?: unknown }).content;
  if (typeof content !== 'string') throw new Error('wordle observation message has no text content');
  return content;
}
