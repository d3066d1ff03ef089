// TRL's examples/scripts/openenv/echo.py as an environment class: one tool, `echo(message)`, against
// OpenEnv's echo env (webgrpo's built-in /envs/echo, or any OpenEnv echo server with --env-url). The
// reward is the env's step reward; OpenEnv's MCP echo pays none for a tool call, so then it is the
// older echo's rule applied to what came back: 0.1 per character.
//
//   webgrpo train --model DIR --env-class examples/echo.mjs
import { EnvClient, envUrl } from 'webgrpo/openenv';

export default class EchoToolEnv {
  constructor() {
    this.env = new EnvClient(envUrl('echo'));
    this.reward = 0;
  }

  async reset() {
    this.reward = 0;
    await this.env.reset();
    return null;
  }

  /**
   * Echo the message back from the environment.
   *
   * @param {string} message The message to echo
   * @returns {string} The echoed message.
   */
  async echo(message) {
    const { value, reward } = await this.env.callTool('echo_message', { message });
    this.reward = reward ?? [...String(value)].length * 0.1;
    return value;
  }

  close() {
    return this.env.close();
  }
}

export function reward_func({ environments }) {
  return environments.map((env) => env.reward);
}

export const rewardFuncs = [reward_func];

export const dataset = [
  "Try to echo 'Hello World!' in the environment.",
  "Make the environment echo 'Goodbye World!'",
  "Can you ask the environment to echo 'TRL is great!'?",
  "What happens if you ask the environment to echo 'I love RLHF!'?",
  "Try to make the environment echo 'OpenEnv is awesome!'",
].map((content) => ({ prompt: [{ role: 'user', content }] }));

export const config = { chat_template_kwargs: { enable_thinking: false }, log_completions: true, logging_steps: 2 };
