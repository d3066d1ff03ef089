// The renderer memory bound outlives a failed poll: a CDP call that fails while the browser lives
// (a detached session, a timeout under load) must not end the watch for the browser's whole life.
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { Browser, CDPSession } from 'playwright-core';
import { watchRendererMemory } from '../../env-server/envs/browsergym/renderer-memory.ts';

describe('watchRendererMemory', () => {
  it('opens a new session after a failed poll and still kills a renderer over the bound', { timeout: 10_000 }, async () => {
    // A stand-in "renderer": any process of ours; its private memory is over a 0 MiB bound.
    const renderer = spawn('sleep', ['60'], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((r) => renderer.on('exit', (_code, signal) => r(signal)));
    const sessions: string[] = [];
    const browser = Object.assign(new EventEmitter(), {
      isConnected: () => true,
      newBrowserCDPSession: async () => {
        const n = sessions.push('open');
        return {
          // The first session fails its call, as a detached one does; the next one answers.
          send: async () => {
            if (n === 1) throw new Error('Target page, context or browser has been closed');
            return { processInfo: [{ type: 'renderer', id: renderer.pid }] };
          },
          detach: async () => { sessions[n - 1] = 'detached'; },
        } as unknown as CDPSession;
      },
    }) as unknown as Browser;
    const lines: string[] = [];
    try {
      await watchRendererMemory(browser, 0, (line) => lines.push(line));
      expect(await exited).toBe('SIGKILL');
      expect(sessions).toEqual(['detached', 'open']);
      expect(lines[0]).toMatch(/browsergym killed a renderer using \d+ MiB \(limit 0 MiB/);
    } finally {
      (browser as unknown as EventEmitter).emit('disconnected');
      renderer.kill('SIGKILL');
    }
  });
});
