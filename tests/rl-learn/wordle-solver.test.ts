import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { createWordleEnvironment, loadShippedWords } from '../../env-server/envs/wordle.ts';
import { wordleFeedback } from '../../src/openenv/wordle-feedback.ts';
import { envTools } from '../../src/rl/rollout/env.ts';
import { builtinClassTask } from '../../src/rl/tasks/env-class-builtin.ts';
import { renderPrompt } from '../../src/rl/rollout/rollout.ts';
import { tokenizeTranscript, type Transcript } from '../../src/rl/grpo/sft.ts';
import { FINAL_ANSWER, SOLVERS, wordleTranscripts } from '../../src/rl/tasks/solvers.ts';
import { rolloutChatTemplate } from '../../src/rl/rollout/templates/select.ts';
import { WORDLE_ANSWERS } from '../../src/rl/tasks/wordle-answers.ts';
import { bestGuess, parseWordleFeedback, WORDLE_OPENER, WordleSolver } from '../../src/rl/tasks/wordle-solver.ts';
import { qwen3Tokenizer } from '../rl-rollout/qwen3-tokenizer.ts';

const qwen = qwen3Tokenizer();

let server: EnvServer;
beforeAll(async () => {
  server = await createEnvServer({ port: 0 });
});
afterAll(async () => {
  await server?.close();
});

/** The guesses of a transcript, bare (`slate`), in order. */
function guessesOf(t: Transcript): string[] {
  return t.messages.flatMap((m) => (m.role === 'assistant' && m.tool_calls ? m.tool_calls.map((c) => String((c.function.arguments as { guess: unknown }).guess).slice(1, -1)) : []));
}

/** A game is won when the last guess got no feedback: the env announces feedback only for misses. */
function won(t: Transcript): boolean {
  const lastTool = t.messages[t.messages.length - 2]!;
  return lastTool.role === 'tool' && !String(lastTool.content).includes('Feedback:');
}

/** The env's own feedback for `guess` against `secret`, read from its game log the way the solver reads it. */
function envFeedback(guess: string, secret: string): string {
  const env = createWordleEnvironment({ answers: [secret], valid: loadShippedWords().valid });
  env.reset({ seed: 0 });
  const wire = env.step({ message: `[${guess}]` });
  const log = String((wire.observation.messages as { content: string }[])[0]!.content);
  return parseWordleFeedback(log, guess).join('');
}

describe('wordle feedback', () => {
  it('equals the env on repeated letters (greens consume first, then yellows left to right)', () => {
    const cases: [guess: string, secret: string, marks: string][] = [
      ['papal', 'apple', 'YYGXY'],
      ['speed', 'abide', 'XXYXY'],
      ['eerie', 'there', 'YXYXG'],
      ['llama', 'hello', 'YYXXX'],
      ['hello', 'llama', 'XXYYX'],
      ['added', 'dread', 'YYXYG'],
    ];
    for (const [guess, secret, marks] of cases) {
      expect(envFeedback(guess, secret), `${guess} vs ${secret}`).toBe(marks);
      expect(wordleFeedback(guess, secret).join(''), `${guess} vs ${secret}`).toBe(marks);
    }
  });

  it('the solver keeps exactly the answers that fit repeated-letter feedback', () => {
    const solver = new WordleSolver(['there', 'three', 'ether', 'other', 'eerie']);
    solver.observe('eerie', [...'YXYXG'] as ('G' | 'Y' | 'X')[]);
    expect(solver.remaining).toEqual(['there']);
    expect(() => solver.observe('there', [...'XXXXX'] as ('G' | 'Y' | 'X')[])).toThrow(/feedback XXXXX for 'there' fits no answer/);
  });

  it('parse errors name the guess and the reply', () => {
    expect(() => parseWordleFeedback('\n[GAME] You attempted an invalid move.', 'slate')).toThrow(/no feedback for 'slate'/);
    expect(() => parseWordleFeedback('[GAME] You submitted [slate].\nFeedback:\nS L A T E\nG G\n', 'slate')).toThrow(/unreadable feedback for 'slate'/);
  });
});

describe('wordle solver', () => {
  it('its candidate list is the env answer list, and the opener is one of them', () => {
    expect(WORDLE_ANSWERS).toEqual(loadShippedWords().answers);
    expect(WORDLE_ANSWERS).toContain(WORDLE_OPENER);
  });

  it('bestGuess scores only the first `pool` candidates and prefers the best split', () => {
    // 'crane' and 'crate' split this list into 4 singletons (tie: the earlier wins); 'brine' leaves crate/grate together.
    const list = ['brine', 'crane', 'crate', 'grate'];
    expect(bestGuess(list, Infinity)).toBe('crane');
    expect(bestGuess(list, 1)).toBe('brine');
    expect(() => bestGuess([])).toThrow(/no candidates/);
  });

  it('wins at least 90% of 20 seeded games against the env within 6 guesses; same seed → same games', async () => {
    const url = `${server.url}/envs/wordle`;
    const ts = await wordleTranscripts({ baseUrl: url, episodes: 20, seed: 7 });
    expect(ts).toHaveLength(20);
    let wins = 0;
    const secrets = new Set<string>();
    for (const t of ts) {
      const guesses = guessesOf(t);
      expect(guesses[0]).toBe(WORDLE_OPENER);
      expect(guesses.length).toBeLessThanOrEqual(6);
      expect(new Set(guesses).size).toBe(guesses.length);
      expect(t.messages.some((m) => m.role === 'tool' && String(m.content).includes('invalid move'))).toBe(false);
      expect(t.messages[t.messages.length - 1]).toEqual({ role: 'assistant', content: FINAL_ANSWER });
      expect(t.tools!.map((s) => s.function.name)).toEqual(['guess']);
      if (won(t)) {
        wins++;
        secrets.add(guesses[guesses.length - 1]!);
      } else {
        expect(guesses).toHaveLength(6);
      }
    }
    expect(wins / ts.length).toBeGreaterThanOrEqual(0.9);
    expect(secrets.size).toBeGreaterThan(10);
    expect(await wordleTranscripts({ baseUrl: url, episodes: 3, seed: 7 })).toEqual(ts.slice(0, 3));
  });

  it('is registered for --sft-solver wordle and the worker', () => {
    expect(SOLVERS.wordle).toBe(wordleTranscripts);
  });

  it('transcripts render with the chat template and tokenize like a rollout (real Qwen3 tokenizer)', async () => {
    const [t] = await wordleTranscripts({ baseUrl: `${server.url}/envs/wordle`, episodes: 1, seed: 3 });
    const kwargs = { enable_thinking: false };
    const template = rolloutChatTemplate(qwen, { hasTools: true });
    const ex = tokenizeTranscript(t!, { tokenizer: qwen, template, chatTemplateKwargs: kwargs });
    const probe = (await builtinClassTask('wordle'))!.envFactory({ wordle: 'http://unused' })();
    const prompt = renderPrompt({ tokenizer: qwen, template, prompt: [t!.messages[0] as never], tools: envTools(probe), chatTemplateKwargs: kwargs });
    expect(ex.ids.slice(0, prompt.ids.length)).toEqual(prompt.ids);
    expect(ex.trainMask.slice(0, prompt.ids.length).every((m) => m === 0)).toBe(true);
    const firstTurnEnd = ex.trainMask.indexOf(0, prompt.ids.length);
    expect(qwen.decode(ex.ids.slice(prompt.ids.length, firstTurnEnd))).toBe(
      `<tool_call>\n{"name": "guess", "arguments": {"guess": "[${WORDLE_OPENER}]"}}\n</tool_call><|im_end|>`,
    );
    const lastTurn = ex.trainMask.lastIndexOf(0) + 1;
    expect(qwen.decode(ex.ids.slice(lastTurn))).toBe(`${FINAL_ANSWER}<|im_end|>`);
    // the completion (everything after the prompt) fits the wordle preset's max_completion_length of 1024
    expect(ex.ids.length - prompt.ids.length).toBeLessThan(1024);
  });
});
