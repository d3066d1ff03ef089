// `webgrpo env-server` flags → server options, and the errors bad flags get.

import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { parseEnvServerArgs } from '../../src/cli/env-server.ts';
import { run as webgrpo } from '../../src/cli/main.ts';

describe('webgrpo env-server arguments', () => {
  it('maps every flag', () => {
    const parsed = parseEnvServerArgs([
      '--host', '0.0.0.0', '--port', '9000', '--max-concurrent-envs', '4', '--queue', '--queue-timeout', '2.5',
      '--session-timeout', '60', '--proxy-session-timeout', '90', '--max-message-bytes', '1024',
      '--max-send-buffer-bytes', '2048', '--max-pending-bytes', '4096', '--max-json-depth', '32', '--mcp-session-timeout', '120', '--verbose',
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
        logSessions: true,
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

  it('a malformed --upstream URL stops env-server and start before anything listens, naming the flag and the URL', async () => {
    expect(() => parseEnvServerArgs(['--upstream', 'bad=ftp://x'])).toThrow('--upstream bad=ftp://x: replica URL must be http(s):// or ws(s)://');
    expect(() => parseEnvServerArgs(['--upstream', 'bad=http://h:99999'])).toThrow('--upstream bad=http://h:99999: replica URL does not parse');
    const errors: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void errors.push(a.join(' ')));
    try {
      expect(await webgrpo(['env-server', '--port', '0', '--upstream', 'a=http://ok.example,nope'])).toBe(1);
      // --data: were the check ever late, no run store would be opened in the user's home.
      expect(await webgrpo(['start', '--port', '0', '--dist', '.', '--data', join(tmpdir(), 'webgrpo-cli-args-never'), '--upstream', 'b=ws://x?token=1'])).toBe(1);
    } finally {
      spy.mockRestore();
    }
    expect(errors).toEqual([
      'webgrpo env-server: --upstream a=nope: replica URL must be http(s):// or ws(s)://',
      'webgrpo start: --upstream b=ws://x?token=1: replica URL must not have a query or fragment',
    ]);
  });
});
