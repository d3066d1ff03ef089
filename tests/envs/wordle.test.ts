import { describe, expect, it } from 'vitest';
import { createWordleEnvironment, loadShippedWords, wordleEnv, wordleFeedback } from '../../env-server/envs/wordle.ts';
import type { EnvInstance, WireObservation } from '../../env-server/envs/types.ts';
import { wire } from './wire.ts';

// The reset text exactly as the spec gives it (JSON escapes).
const INTRO: string = JSON.parse(
  '"You are Playing Wordle.\\nA secret 5-letter word has been chosen. You have 6 attempts to guess it.\\nFor each guess, wrap your word in square brackets (e.g., \'[apple]\').\\nFeedback for each letter will be given as follows:\\n  - G (green): correct letter in the correct position\\n  - Y (yellow): letter exists in the word but in the wrong position\\n  - X (wrong): letter is not in the word\\nEnter your guess to begin.\\n"',
);
const RESET_LOG = '\n[GAME] ' + INTRO;
const WARNING_TAIL = ' Please resubmit a valid move and remember to follow the game rules to avoid penalties.';

/** An env whose secret is fixed: the answer list holds only that word. */
function withSecret(secret: string): EnvInstance {
  const env = createWordleEnvironment({ answers: [secret], valid: loadShippedWords().valid });
  env.reset({ seed: 0 });
  return env;
}

function say(env: EnvInstance, message: string): WireObservation {
  return env.step({ message });
}

function logOf(obs: WireObservation): string {
  const messages = obs.observation.messages as { sender_id: number; content: string; category: string }[];
  expect(messages).toHaveLength(1);
  expect(messages[0]!.sender_id).toBe(-1);
  expect(messages[0]!.category).toBe('MESSAGE');
  return messages[0]!.content;
}

function signals(obs: WireObservation): Record<string, number> {
  return (obs.observation.info as { reward_signals: Record<string, number> }).reward_signals;
}

function submitted(word: string, feedback: string, left: number): string {
  return `\n[GAME] You submitted [${word}].\nFeedback:\n${[...word.toUpperCase()].join(' ')}\n${feedback}\nYou have ${left} guesses left.`;
}

function invalid(reason: string): string {
  return `\n[GAME] You attempted an invalid move. Reason: ${reason}${WARNING_TAIL}`;
}

describe('wordle env (TextArena Wordle-v0)', () => {
  it('reset: the intro log, stripped prompt, empty info, fields in order', () => {
    const env = withSecret('cloak');
    const obs = env.reset({});
    expect(Object.keys(obs.observation)).toEqual(['prompt', 'messages', 'current_player_id', 'legal_players', 'info']);
    expect(wire(obs)).toEqual({
      observation: {
        prompt: RESET_LOG.trim(),
        messages: [{ sender_id: -1, content: RESET_LOG, category: 'MESSAGE' }],
        current_player_id: 0,
        legal_players: [0],
        info: {},
      },
      reward: 0,
      done: false,
    });
    const state = env.state();
    expect(Object.keys(state)).toEqual(['episode_id', 'step_count', 'env_id', 'num_players', 'max_turns', 'turn', 'last_reward', 'last_info', 'raw_state']);
    expect(state).toMatchObject({ step_count: 0, env_id: 'Wordle-v0', num_players: 1, max_turns: null, turn: 0, last_reward: 0, last_info: {}, raw_state: {} });
  });

  it('reproduces the spec example: secret cloak, guess [crane]', () => {
    const env = withSecret('cloak');
    const obs = say(env, '[crane]');
    expect(logOf(obs)).toBe(
      RESET_LOG + '\n[GAME] [crane]\n[GAME] You submitted [crane].\nFeedback:\nC R A N E\nG X Y X X\nYou have 5 guesses left.',
    );
    expect(obs.observation.info).toEqual({
      reward_signals: { 'wordle.greens': 0.2, 'wordle.yellows': 0.2, 'wordle.repetitions': 1.0, 'wordle.correct': 0.0 },
    });
    expect(Object.keys(signals(obs))).toEqual(['wordle.greens', 'wordle.yellows', 'wordle.repetitions', 'wordle.correct']);
    expect(obs.observation.prompt).toBe('Wordle-v0');
    expect(obs.reward).toBe(0);
    expect(obs.done).toBe(false);
    expect(env.state()).toMatchObject({ step_count: 1, turn: 1, last_reward: 0, last_info: obs.observation.info, raw_state: {} });
  });

  it('brackets a bare move and removes [Player]/[GAME] from the echoed move', () => {
    const env = withSecret('cloak');
    expect(logOf(say(env, 'crane'))).toBe(RESET_LOG + '\n[GAME] [crane]' + submitted('crane', 'G X Y X X', 5));
    const other = withSecret('cloak');
    // The first bracketed word is "[Player]" (6 letters), so this is a length error.
    expect(logOf(say(other, '[Player] [crane]'))).toBe(
      RESET_LOG + '\n[GAME]  [crane]' + invalid('Your word must be exactly 5 letters.'),
    );
  });

  it('scores repeated letters in two passes: apple vs papal → Y Y G X Y', () => {
    expect(wordleFeedback('papal', 'apple').join(' ')).toBe('Y Y G X Y');
    expect(wordleFeedback('speed', 'abide').join(' ')).toBe('X X Y X Y');
    expect(wordleFeedback('eerie', 'there').join(' ')).toBe('Y X Y X G');
    const obs = say(withSecret('apple'), '[PAPAL]');
    expect(logOf(obs).endsWith(submitted('papal', 'Y Y G X Y', 5))).toBe(true);
    expect(signals(obs)['wordle.greens']).toBe(0.2);
    expect(signals(obs)['wordle.yellows']).toBe(0.6);
  });

  it('gives each of the four invalid-move reasons', () => {
    const cases: [string, string][] = [
      ['[crane', 'You tried submitting a word in the wrong format. Please make sure to use squared brackets.'],
      ['', 'You tried submitting a word in the wrong format. Please make sure to use squared brackets.'],
      ['[cats]', 'Your word must be exactly 5 letters.'],
      ['[xyzzy]', "'xyzzy' is not an English word."],
      ['[héllo]', "'héllo' is not an English word."],
    ];
    for (const [message, reason] of cases) {
      const env = withSecret('cloak');
      const obs = say(env, message);
      expect(logOf(obs).endsWith(invalid(reason))).toBe(true);
      expect(obs.reward).toBe(0);
      expect(obs.done).toBe(false);
      expect(env.state().turn).toBe(0);
    }
    const env = withSecret('cloak');
    say(env, '[crane]');
    const again = say(env, '[Crane]');
    expect(logOf(again).endsWith("\n[GAME] [Crane]" + invalid("You have already guessed 'crane' before. Please try a different word."))).toBe(true);
    expect(env.state().turn).toBe(1);
  });

  it('warns on the first invalid move and ends silently on the second in a row', () => {
    const env = withSecret('cloak');
    say(env, '[crane]'); // G X Y X X: completion (1 + 0.5) / 5
    const warned = say(env, '[cats]');
    expect(warned.done).toBe(false);
    const ended = say(env, '[xyzzy]');
    expect(logOf(ended)).toBe(logOf(warned) + '\n[GAME] [xyzzy]');
    expect(ended.done).toBe(true);
    expect(ended.reward).toBe(0.3);
    expect(signals(ended)['wordle.correct']).toBe(0.3);
    expect(() => say(env, '[cloak]')).toThrow('Game is over. Call reset.');

    const fresh = withSecret('cloak');
    say(fresh, 'no brackets here [');
    const over = say(fresh, '[ab]');
    expect(over.done).toBe(true);
    expect(over.reward).toBe(0);
  });

  it('a valid move resets the invalid-move count', () => {
    const env = withSecret('cloak');
    say(env, '[cats]');
    say(env, '[crane]');
    const obs = say(env, '[dogs]');
    expect(obs.done).toBe(false);
    expect(logOf(obs).endsWith(invalid('Your word must be exactly 5 letters.'))).toBe(true);
  });

  it('a win gives 1.0, ends the game and adds no feedback text', () => {
    const env = withSecret('cloak');
    const first = say(env, '[crane]');
    const win = say(env, '[cloak]');
    expect(logOf(win)).toBe(logOf(first) + '\n[GAME] [cloak]');
    expect(win.reward).toBe(1);
    expect(win.done).toBe(true);
    expect(win.observation.prompt).toBe('Wordle-v0');
    // No new feedback line: greens/yellows repeat the previous guess's.
    expect(win.observation.info).toEqual({
      reward_signals: { 'wordle.greens': 0.2, 'wordle.yellows': 0.2, 'wordle.repetitions': 1, 'wordle.correct': 1 },
    });
    expect(env.state()).toMatchObject({ turn: 2, last_reward: 1 });
    expect(() => say(env, '[crane]')).toThrow('Game is over. Call reset.');
    // reset starts over
    expect(logOf(env.reset({}))).toBe(RESET_LOG);
    expect(env.state()).toMatchObject({ turn: 0, step_count: 0, last_reward: 0, last_info: {} });
  });

  it('a first-guess win has no feedback at all', () => {
    const win = say(withSecret('cloak'), 'cloak');
    expect(win.reward).toBe(1);
    expect(signals(win)).toEqual({ 'wordle.greens': 0, 'wordle.yellows': 0, 'wordle.repetitions': 1, 'wordle.correct': 1 });
  });

  it('ends after 6 valid guesses with the partial reward of the last one', () => {
    const env = withSecret('cloak');
    const plays: [string, string][] = [
      ['crane', 'G X Y X X'],
      ['slate', 'X G Y X X'],
      ['moist', 'X Y X X X'],
      ['brick', 'X X X Y G'],
      ['pound', 'X Y X X X'],
    ];
    let log = RESET_LOG;
    plays.forEach(([word, feedback], i) => {
      const obs = say(env, `[${word}]`);
      log += `\n[GAME] [${word}]` + submitted(word, feedback, 5 - i);
      expect(logOf(obs)).toBe(log);
      expect(obs.reward).toBe(0);
      expect(obs.done).toBe(false);
    });
    const last = say(env, '[clock]'); // G G G X G
    expect(logOf(last)).toBe(log + '\n[GAME] [clock]' + submitted('clock', 'G G G X G', 0));
    expect(last.done).toBe(true);
    expect(last.reward).toBe(0.8);
    expect(signals(last)).toEqual({ 'wordle.greens': 0.8, 'wordle.yellows': 0, 'wordle.repetitions': 1, 'wordle.correct': 0.8 });
    expect(env.state()).toMatchObject({ turn: 6, step_count: 6, last_reward: 0.8 });
  });

  it('prompt is the stripped log until the first valid guess, then Wordle-v0', () => {
    const env = withSecret('cloak');
    const afterInvalid = say(env, '[cats]');
    expect(afterInvalid.observation.prompt).toBe(logOf(afterInvalid).trim());
    expect(say(env, '[crane]').observation.prompt).toBe('Wordle-v0');
  });

  it('counts repetitions of the normalized guess, invalid moves included, [dunno] never', () => {
    const env = withSecret('cloak');
    expect(signals(say(env, 'crane'))['wordle.repetitions']).toBe(1); // [crane]
    expect(signals(say(env, '123'))['wordle.repetitions']).toBe(1); // [dunno], invalid (3 letters): warned
    expect(signals(say(env, '[slate]'))['wordle.repetitions']).toBe(1);
    expect(signals(say(env, 'I pick [CRANE] again'))['wordle.repetitions']).toBe(0); // already guessed: warned
    expect(signals(say(env, '[moist]'))['wordle.repetitions']).toBe(1);
    expect(signals(say(env, '[123]'))['wordle.repetitions']).toBe(1); // [dunno] again: still not counted
    const ended = say(env, 'c-r-a-n-e-s'); // letters "cranes" → [crane], third time; second invalid in a row ends
    expect(signals(ended)['wordle.repetitions']).toBe(-1);
    expect(ended.done).toBe(true);

    // Fewer than five letters outside brackets is unreadable: never counted.
    const short = withSecret('cloak');
    expect(signals(say(short, '[ab]'))['wordle.repetitions']).toBe(1);
    expect(signals(say(short, '[crane]'))['wordle.repetitions']).toBe(1);
    expect(signals(say(short, '[ab]'))['wordle.repetitions']).toBe(1);
  });

  it('reset honours episode_id, as upstream textarena does', () => {
    const env = withSecret('cloak');
    env.reset({ episode_id: 'ep-ws-1', unknown_key: true });
    expect(env.state().episode_id).toBe('ep-ws-1');
    env.reset({});
    expect(env.state().episode_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(() => env.reset({ episode_id: 7 })).toThrow('episode_id must be a string or null, got 7');
  });

  it('seeded resets draw reproducible secrets from the shipped answers', () => {
    const feedbackFor = (seed: number): string => {
      const env = wordleEnv.create();
      env.reset({ seed });
      return logOf(say(env, '[crane]'));
    };
    const logs = Array.from({ length: 8 }, (_, seed) => feedbackFor(seed));
    expect(Array.from({ length: 8 }, (_, seed) => feedbackFor(seed))).toEqual(logs);
    expect(new Set(logs).size).toBeGreaterThan(1);
    expect(() => wordleEnv.create().reset({ seed: 1.5 })).toThrow('seed must be a non-negative integer or null, got 1.5');
  });

  it('a fresh env (no reset) can step, as a stateless HTTP /step does', () => {
    const obs = wordleEnv.create().step({ message: '[crane]' });
    expect(logOf(obs).startsWith(RESET_LOG + '\n[GAME] [crane]')).toBe(true);
  });

  it('validates TextArenaAction and publishes TextArenaEnvironment metadata', () => {
    expect(wordleEnv.validateAction({ message: '' })).toEqual({ ok: true, action: { metadata: {}, message: '' } });
    const check = wordleEnv.validateAction({ message: 5, turn: 1 });
    expect(check.ok).toBe(false);
    if (!check.ok) {
      expect(check.errors.map((e) => [e.type, e.loc])).toEqual([
        ['string_type', ['message']],
        ['extra_forbidden', ['turn']],
      ]);
    }
    expect(wordleEnv.metadata).toMatchObject({ name: 'TextArenaEnvironment', description: 'TextArenaEnvironment environment', version: '1.0.0' });
    const observation = wordleEnv.schema.observation as Record<string, unknown>;
    expect(Object.keys(observation.properties as object)).toEqual(['done', 'reward', 'metadata', 'prompt', 'messages', 'current_player_id', 'legal_players', 'info']);
    expect(observation.$defs).toHaveProperty('TextArenaMessage');
  });

  it('ships answer and valid lists: lower-case, 5 letters, sorted, unique, answers ⊂ valid', () => {
    const { answers, valid } = loadShippedWords();
    expect(answers.length).toBeGreaterThan(1000);
    expect(valid.size).toBeGreaterThan(10000);
    expect([...answers].sort()).toEqual(answers);
    expect(new Set(answers).size).toBe(answers.length);
    for (const word of answers) expect(valid.has(word)).toBe(true);
    expect(() => createWordleEnvironment({ answers: ['zzzzz'], valid })).toThrow("Wordle answer 'zzzzz' is not in the valid-guess list");
  });
});
