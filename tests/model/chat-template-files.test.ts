// Where the chat template is found, as transformers finds it: chat_template.jinja (all transformers 5
// writes), chat_template.json, or tokenizer_config.json (a string, or named templates with
// 'default' and 'tool_use'), for a folder, a Hub download and picked files alike.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { browserFiles, memoryFiles } from '../../src/model/files.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { loadCheckpointTokenizer, loadTokenizer } from '../../src/model/tokenizer.ts';
import { checkpointChatTemplate } from '../../src/rl/rollout/templates/select.ts';
import { startFakeHub, type FakeHub } from './hub-server.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

let tiny: Map<string, Uint8Array>;
let ownTemplate: string;
/** The tiny model's files as transformers 5 saves them: template in chat_template.jinja only. */
let v5: Map<string, Uint8Array>;

beforeAll(async () => {
  tiny = await makeTinyCheckpointFiles({ seed: 4, layers: 1 });
  const config = JSON.parse(dec(tiny.get('tokenizer_config.json')!));
  ownTemplate = config.chat_template;
  delete config.chat_template;
  v5 = new Map(tiny);
  v5.set('tokenizer_config.json', enc(JSON.stringify(config)));
  v5.set('chat_template.jinja', enc(ownTemplate));
});

describe('chat template locations', () => {
  it('chat_template.jinja when tokenizer_config.json has none (transformers 5)', async () => {
    const tok = await loadCheckpointTokenizer(memoryFiles(v5), 'v5');
    expect(tok.chatTemplate).toBe(ownTemplate);
  });

  it('chat_template.jinja wins over tokenizer_config.json, as in transformers', async () => {
    const both = new Map(tiny);
    both.set('chat_template.jinja', enc('{{ "jinja" }}'));
    expect((await loadCheckpointTokenizer(memoryFiles(both), 'both')).chatTemplate).toBe('{{ "jinja" }}');
  });

  it('chat_template.json, string or named list', async () => {
    const json = new Map(v5);
    json.delete('chat_template.jinja');
    json.set('chat_template.json', enc(JSON.stringify({ chat_template: ownTemplate })));
    expect((await loadCheckpointTokenizer(memoryFiles(json), 'json')).chatTemplate).toBe(ownTemplate);
    json.set('chat_template.json', enc(JSON.stringify({ chat_template: [{ name: 'default', template: 'D' }, { name: 'tool_use', template: 'T' }] })));
    expect((await loadCheckpointTokenizer(memoryFiles(json), 'json')).chatTemplates).toEqual({ default: 'D', tool_use: 'T' });
  });

  it("named templates in tokenizer_config.json: 'tool_use' with tools, 'default' without", () => {
    const config = JSON.parse(dec(tiny.get('tokenizer_config.json')!));
    config.chat_template = [{ name: 'default', template: 'D' }, { name: 'tool_use', template: 'T' }, { name: 'rag', template: 'R' }];
    const tok = loadTokenizer(dec(tiny.get('tokenizer.json')!), JSON.stringify(config));
    expect(tok.chatTemplate).toBe('D');
    expect(checkpointChatTemplate(tok, { hasTools: true })).toBe('T');
    expect(checkpointChatTemplate(tok, { hasTools: false })).toBe('D');
    config.chat_template = [{ name: 'rag', template: 'R' }];
    const noDefault = loadTokenizer(dec(tiny.get('tokenizer.json')!), JSON.stringify(config));
    expect(() => checkpointChatTemplate(noDefault, { hasTools: false })).toThrow("chat templates named rag but none called 'default'");
    config.chat_template = [{ name: 'x' }];
    expect(() => loadTokenizer(dec(tiny.get('tokenizer.json')!), JSON.stringify(config))).toThrow(/chat_template list entries must be \{"name": string, "template": string\}/);
    delete config.chat_template;
    const none = loadTokenizer(dec(tiny.get('tokenizer.json')!), JSON.stringify(config));
    expect(() => checkpointChatTemplate(none, { hasTools: false })).toThrow(/no chat template \(looked in chat_template.jinja, chat_template.json and tokenizer_config.json\)/);
  });

  it('picked folder files (browser) find chat_template.jinja', async () => {
    const picked = [...v5].map(([name, bytes]) => Object.assign(new File([new Uint8Array(bytes)], name), { webkitRelativePath: `model/${name}` }));
    expect((await loadCheckpointTokenizer(browserFiles(picked), 'picked')).chatTemplate).toBe(ownTemplate);
  });

  describe('Hub download', () => {
    let hub: FakeHub;
    let cacheDir: string;
    beforeAll(async () => {
      hub = await startFakeHub();
      hub.repos.set('tiny/v5', v5);
      cacheDir = await mkdtemp(join(tmpdir(), 'webgrpo-cache-'));
    });
    afterAll(async () => {
      await hub.close();
      await rm(cacheDir, { recursive: true, force: true });
    });

    it('downloads chat_template.jinja with the other side files', async () => {
      const ckpt = await openCheckpoint('tiny/v5', { endpoint: hub.endpoint, cacheDir });
      expect((await loadCheckpointTokenizer(ckpt, 'tiny/v5')).chatTemplate).toBe(ownTemplate);
      expect(hub.requests.some((r) => r.path.endsWith('/chat_template.jinja') && r.status === 200)).toBe(true);
    });
  });
});
