import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { loadTokenizer } from '../../src/model/tokenizer.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { renderPrompt, toolSuffixIds } from '../../src/rl/rollout/rollout.ts';
import { envTools } from '../../src/rl/rollout/env.ts';
import { builtinClassTask } from '../../src/rl/tasks/env-class-builtin.ts';
import { rolloutChatTemplate } from '../../src/rl/rollout/templates/select.ts';
import { catchAction, catchTranscripts, compactCatchTranscripts, echoTranscripts, FINAL_ANSWER } from '../../src/rl/tasks/solvers.ts';
import { parseTranscripts, tokenizeTranscript, transcriptsToJsonl, trainSft, type Transcript } from '../../src/rl/grpo/sft.ts';
import { FakeEngine } from './fake-engine.ts';
import type { ToolMessage } from '../../src/rl/rollout/tools.ts';
import { qwen3Tokenizer } from '../rl-rollout/qwen3-tokenizer.ts';

const qwen = qwen3Tokenizer();

let server: EnvServer;
beforeAll(async () => {
  server = await createEnvServer({ port: 0 });
});
afterAll(async () => {
  await server?.close();
});

describe('scripted solvers', () => {
  it('catch: moves toward the ball and always catches it (9 calls, then a final answer)', async () => {
    const ts = await catchTranscripts({ baseUrl: `${server.url}/envs/catch`, episodes: 5, seed: 3 });
    expect(ts).toHaveLength(5);
    const ballColumns = new Set<string>();
    for (const t of ts) {
      const first = String(t.messages[0]!.content);
      const ball = /Ball: row 1\/10, column (\d)\/5/.exec(first)![1]!;
      ballColumns.add(ball);
      const calls = t.messages.filter((m) => m.role === 'assistant' && m.tool_calls);
      expect(calls).toHaveLength(9);
      const last = t.messages[t.messages.length - 2]!;
      expect(last.role).toBe('tool');
      expect(last.content).toBe(`Paddle: column ${ball}/5`);
      expect(t.messages[t.messages.length - 1]).toEqual({ role: 'assistant', content: FINAL_ANSWER });
      expect(t.tools!.map((s) => s.function.name)).toEqual(['move', 'stay']);
    }
    expect(ballColumns.size).toBeGreaterThan(1);
    // same seed → same games
    const again = await catchTranscripts({ baseUrl: `${server.url}/envs/catch`, episodes: 5, seed: 3 });
    expect(again).toEqual(ts);
  });

  it('catch policy reads the observation line', () => {
    expect(catchAction('The ball is 2 column(s) to the LEFT of the paddle.').function).toEqual({ name: 'move', arguments: { direction: 'left' } });
    expect(catchAction('The ball is 1 column(s) to the RIGHT of the paddle.').function).toEqual({ name: 'move', arguments: { direction: 'right' } });
    expect(catchAction('The ball is directly above the paddle.').function).toEqual({ name: 'stay', arguments: {} });
  });

  it('echo: calls echo with the quoted message', async () => {
    const [t] = await echoTranscripts({ baseUrl: `${server.url}/envs/echo`, episodes: 1, seed: 0 });
    expect(t!.messages[1]).toEqual({ role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'echo', arguments: { message: 'Hello World!' } } }] });
    expect(t!.messages[2]).toMatchObject({ role: 'tool', name: 'echo', content: 'Hello World!' });
  });
});

describe('SFT on transcripts', () => {
  const kwargs = { enable_thinking: false };

  it('imperfect transcripts for the demo model: random catch moves and cut-short echoes, seeded', async () => {
    const base = `${server.url}/envs/catch`;
    const moves = (ts: Transcript[]) => ts.flatMap((t) => t.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : []).map((c) => JSON.stringify(c.function))));
    const observations = (ts: Transcript[]) => ts.flatMap((t) => t.messages.filter((m) => m.role === 'tool').map((m) => String(m.content)));
    const scripted = await compactCatchTranscripts({ baseUrl: base, episodes: 6, seed: 5 });
    const noisy = await compactCatchTranscripts({ baseUrl: base, episodes: 6, seed: 5, randomActions: 1 });
    // Every game is still 9 well-formed calls; the scripted games always catch, random ones mostly not.
    for (const t of [...scripted, ...noisy]) expect(t.messages.filter((m) => m.role === 'assistant' && m.tool_calls).length).toBe(9);
    expect(observations(scripted).filter((o) => o === 'caught')).toHaveLength(6);
    expect(moves(noisy)).not.toEqual(moves(scripted));
    expect(moves(await compactCatchTranscripts({ baseUrl: base, episodes: 6, seed: 5, randomActions: 1 }))).toEqual(moves(noisy));

    const echoes = await echoTranscripts({ baseUrl: `${server.url}/envs/echo`, episodes: 10, seed: 2, partial: 1 });
    for (const t of echoes) {
      const target = /'([^']*)'/.exec(String(t.messages[0]!.content))![1]!;
      const call = t.messages[1]!;
      if (call.role !== 'assistant') throw new Error('expected the echo call');
      const message = String((call.tool_calls![0]!.function.arguments as Record<string, unknown>).message);
      expect(target.startsWith(message)).toBe(true);
      expect(message.length).toBeLessThan(target.length);
      expect(message.length).toBeGreaterThan(0);
    }
  });

  it('tokenizes like a rollout: prompt ids, trained assistant turns, tool suffix ids (real Qwen3 tokenizer)', async () => {
    const [t] = await catchTranscripts({ baseUrl: `${server.url}/envs/catch`, episodes: 1, seed: 11 });
    const template = rolloutChatTemplate(qwen, { hasTools: true });
    const ex = tokenizeTranscript(t!, { tokenizer: qwen, template, chatTemplateKwargs: kwargs });
    const probe = (await builtinClassTask('catch'))!.envFactory({ catch: 'http://unused' })();
    const prompt = renderPrompt({ tokenizer: qwen, template, prompt: [t!.messages[0] as never], tools: envTools(probe), chatTemplateKwargs: kwargs });
    expect(ex.ids.slice(0, prompt.ids.length)).toEqual(prompt.ids);
    expect(ex.trainMask.slice(0, prompt.ids.length).every((m) => m === 0)).toBe(true);
    // first assistant turn, then the suffix of the first tool message
    let pos = prompt.ids.length;
    const end = ex.trainMask.indexOf(0, pos);
    const turn = qwen.decode(ex.ids.slice(pos, end));
    expect(turn).toMatch(/^<tool_call>\n\{"name": "(move|stay)", "arguments": \{.*\}\}\n<\/tool_call><\|im_end\|>$/);
    pos = end;
    const suffix = toolSuffixIds({ tokenizer: qwen, template, chatTemplateKwargs: kwargs }, [t!.messages[2] as ToolMessage]);
    expect(ex.ids.slice(pos, pos + suffix.length)).toEqual(suffix);
    expect(ex.trainMask.slice(pos, pos + suffix.length).every((m) => m === 0)).toBe(true);
    expect(ex.trainMask[pos + suffix.length]).toBe(1);
    // the final answer ends the sequence and is trained
    const lastTurn = ex.trainMask.lastIndexOf(0) + 1;
    expect(qwen.decode(ex.ids.slice(lastTurn))).toBe('Done.<|im_end|>');
  });

  it('round-trips JSONL and names bad lines', () => {
    const ts: Transcript[] = [{ messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'yo' }] }];
    expect(parseTranscripts(transcriptsToJsonl(ts))).toEqual(ts);
    expect(parseTranscripts('[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]\n')[0]!.messages).toHaveLength(2);
    expect(() => parseTranscripts('{"messages": []}\n', 't.jsonl')).toThrow(/t\.jsonl:1: expected a list of messages/);
    expect(() => parseTranscripts('nope\n', 't.jsonl')).toThrow(/t\.jsonl:1: not valid JSON/);
    expect(() => tokenizeTranscript({ messages: [{ role: 'user', content: 'x' }] }, { tokenizer: qwen, template: qwen.chatTemplate! })).toThrow(/no assistant message/);
  });

  it('trains through the engine with dL/dlogp = −mask/N and lowers the loss (byte tokenizer, fake engine)', async () => {
    const tiny = await makeTinyModel({ seed: 1 });
    const tok = loadTokenizer(new TextDecoder().decode(tiny.files.get('tokenizer.json')!), new TextDecoder().decode(tiny.files.get('tokenizer_config.json')!));
    const template = rolloutChatTemplate(tok, { hasTools: true });
    const t: Transcript = { messages: [{ role: 'user', content: 'say hi' }, { role: 'assistant', content: 'hi' }] };
    const ex = tokenizeTranscript(t, { tokenizer: tok, template, chatTemplateKwargs: kwargs });
    // map ids into the fake engine's tiny vocab, keeping the mask
    const fake = new FakeEngine();
    const small = { ids: ex.ids.map((id) => id % 8), trainMask: ex.trainMask };
    const events = [];
    for await (const e of trainSft({ engine: fake.asEngine(), examples: [small], steps: 30, batchSize: 1, learningRate: 0.1, seed: 0, optimizer: { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 } })) events.push(e);
    const back = fake.calls.find((c) => c.kind === 'backward');
    const n = small.trainMask.slice(1).reduce((a, b) => a + b, 0);
    expect(back && back.kind === 'backward' && Array.from(back.dLdLogp[0]!)).toEqual(small.trainMask.slice(1).map((m) => Math.fround(-m / n)));
    expect(events[events.length - 1]!.loss).toBeLessThan(events[0]!.loss - 0.1);
  });
});
