// `webgrpo bench` splits its flags once (bench/main.ts, parseCli) and hands each benchmark the values:
// no benchmark turns them back into argv to parse them again.
import { describe, expect, it } from 'vitest';
import { parseBenchBrowserGymOptions } from '../../bench/env-server/browsergym.ts';
import { parseBenchEnvServerOptions } from '../../bench/env-server/run.ts';
import { run } from '../../bench/main.ts';

describe('bench options', () => {
  it('the env-server and browsergym benches take the values bench/main.ts split', () => {
    expect(parseBenchEnvServerOptions({ sessions: '4', steps: '2', cap: '2', 'no-queue': 'true', env: 'echo' })).toEqual({ sessions: 4, steps: 2, cap: 2, queue: false, env: 'echo' });
    expect(parseBenchEnvServerOptions({ queue: 'true' })).toEqual({ queue: true });
    expect(() => parseBenchEnvServerOptions({ env: 'catch' })).toThrow("--env: only 'echo' is supported, got 'catch'");
    expect(parseBenchBrowserGymOptions({ sessions: '8', cap: '4' })).toEqual({ sessions: 8, cap: 4 });
    expect(() => parseBenchBrowserGymOptions({ steps: '0' })).toThrow("bench browsergym: --steps needs a positive integer, got '0'");
  });

  it('a bad value from the command line is refused by name before the benchmark starts', async () => {
    await expect(run(['env-server', '--sessions', 'many'])).rejects.toThrow("--sessions: expected an integer ≥ 1, got 'many'");
    await expect(run(['browsergym', '--cap', '0'])).rejects.toThrow("bench browsergym: --cap needs a positive integer, got '0'");
    await expect(run(['env-server', '--bogus', '1'])).rejects.toThrow(/unknown option '--bogus'/);
  });
});
