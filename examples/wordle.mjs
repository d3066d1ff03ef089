// TRL's examples/scripts/openenv/wordle.py as an environment class: `guess(guess)` over TextArena's
// Wordle-v0 (webgrpo's built-in /envs/wordle, or a TextArena server with --env-url). The server's
// observation is the whole game log; a guess returns what it added. Invalid moves score 0.
//
//   webgrpo train --model DIR --env-class examples/wordle.mjs
import { EnvClient, envUrl } from 'webgrpo/openenv';

export const PROMPT = `You are an expert Wordle solver with deep knowledge of English vocabulary, letter frequency patterns, and optimal guessing strategies.

Follow these rules to play Wordle:

1. The target is a 5-letter English word
2. You have 6 attempts to guess the correct word
3. After each guess, you receive color-coded feedback:
   - GREEN (G): Letter is correct and in the correct position
   - YELLOW (Y): Letter is in the word but in the wrong position
   - GRAY (X): Letter is not in the word at all
4. All guesses must be valid 5-letter English words
5. You cannot reuse a word you've already guessed
6. Use the tool \`guess\` to make a guess.
`;

/** The game log: the observation's single message. */
function gameLog(result) {
  return result.observation.messages[0].content;
}

export default class WordleEnv {
  constructor() {
    this.client = new EnvClient(envUrl('wordle'));
  }

  async reset() {
    const first = await this.client.reset();
    this._log = gameLog(first);
    this.reward = 0;
    this.done = false;
    return this._log;
  }

  /**
   * Make a guess in the Wordle environment.
   *
   * @param {string} guess The guessed word, formatted as '[abcde]'
   * @returns {string} The feedback message from the environment.
   */
  async guess(guess) {
    if (this.done) throw new Error('Game over.');
    const result = await this.client.step({ message: guess });
    const full = gameLog(result);
    const feedback = full.slice(this._log.length);
    this._log = full;
    this.reward = feedback.includes('You attempted an invalid move') ? 0 : result.reward;
    this.done = result.done;
    return feedback;
  }

  close() {
    return this.client.close();
  }
}

export function reward_func({ environments }) {
  return environments.map((env) => env.reward);
}

export const rewardFuncs = [reward_func];

export const dataset = Array.from({ length: 1000 }, () => ({ prompt: [{ role: 'user', content: PROMPT }] }));

export const config = {
  chat_template_kwargs: { enable_thinking: false },
  log_completions: true,
  logging_steps: 1,
  num_train_epochs: 1,
  num_generations: 4,
  learning_rate: 1e-6,
  gradient_accumulation_steps: 64,
  max_completion_length: 1024,
};
