// `webgrpo env-server` flags → server options, and the errors bad flags get.

import { describe, expect, it } from 'vitest';
import { parseEnvServerArgs } from '../../src/cli/env-server.ts';

describe('webgrpo env-server arguments', () => {
  it('maps every flag', () => {
    const parsed = parseEnvServerArgs([
      '--host', '0.0.0.0', '--port', '9000', '--max-concurrent-envs', '4', '--queue', '--queue-timeout', '2.5',
      '--session-timeout', '60', '--proxy-session-timeout', '90', '--max-message-bytes', '1024',
      '--max-send-buffer-bytes', '2048', '--max-pending-bytes', '4096', '--max-json-depth', '32', '--mcp-session-timeout', '120',
      '--upstream', 'space=https://a.hf.space,https://b.hf.space', '--upstream', 'local=http://127.0.0.1:8001/envs/echo',
    ]);
    expect(parsed).toEqual({
      options: {
        host: '0.0.0.0',
        port: 9000,
        maxConcurrentEnvs: 4,
        queue: true,
        queueTimeoutMs: 2500,
        sessionTimeoutSec: 60,
        proxySessionTimeoutSec: 90,
        maxMessageBytes: 1024,
        maxSendBufferBytes: 2048,
        maxPendingBytes: 4096,
        maxJsonDepth: 32,
        mcpSessionTimeoutSec: 120,
        upstreams: { space: ['https://a.hf.space', 'https://b.hf.space'], local: ['http://127.0.0.1:8001/envs/echo'] },
      },
    });
  });

  it('defaults: port 8000, no upstreams, the rest left to the server', () => {
    expect(parseEnvServerArgs([])).toEqual({ options: { port: 8000, upstreams: {} } });
    expect(parseEnvServerArgs(['--help'])).toEqual({ help: true });
  });

  it('names the problem with bad flags', () => {
    expect(() => parseEnvServerArgs(['--port', 'x'])).toThrow("--port: expected an integer ≥ 0, got 'x'");
    expect(() => parseEnvServerArgs(['--port', '70000'])).toThrow('--port: expected 0..65535, got 70000');
    expect(() => parseEnvServerArgs(['--max-concurrent-envs', '0'])).toThrow("--max-concurrent-envs: expected an integer ≥ 1, got '0'");
    expect(() => parseEnvServerArgs(['--queue-timeout'])).toThrow('--queue-timeout needs a value');
    expect(() => parseEnvServerArgs(['--upstream', 'nourl'])).toThrow("--upstream: expected NAME=URL[,URL…], got 'nourl'");
    expect(() => parseEnvServerArgs(['--upstream', 'a=http://x', '--upstream', 'a=http://y'])).toThrow('--upstream a given twice');
    expect(() => parseEnvServerArgs(['--frobnicate'])).toThrow("unknown option '--frobnicate' (see --help)");
  });
});
