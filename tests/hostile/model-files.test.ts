// Hostile model folders (issue 34): copies of models/demo with one file made hostile each. Every one
// used to hang a CLI command or eat gigabytes — a chat template looping forever (render and train
// spun at 100% CPU for good, and train then ignored SIGTERM), range(3e8) (2.7 GB), num_hidden_layers
// 1e6 (90 s, 3 GB), a tokenizer Split pattern with catastrophic backtracking, a safetensors header
// of 10^6 tensors (53 s, 1.1 GB). Each must now end with an error naming the file and the limit.
// The two time bounds are the issue's own: render fails within 60 s, train stops within 15 s of SIGTERM.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { MAX_HEADER_BYTES } from '../../src/model/safetensors.ts';
import { loadCheckpointTokenizer } from '../../src/model/tokenizer.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { tempDir } from './server-process.ts';

vi.setConfig({ testTimeout: 120_000 });

const ROOT = path.resolve(import.meta.dirname, '../..');
const DEMO = path.join(ROOT, 'models/demo');
const LOOP_FOREVER = '{% for i in range(1000000) %}{% for j in range(1000000) %}{% for k in range(1000000) %}{% endfor %}{% endfor %}{% endfor %}';

let work: ReturnType<typeof tempDir>;

/** A copy of models/demo named `name`, with `edit` applied to its folder. */
function hostileModel(name: string, edit: (dir: string) => void): string {
  const dir = path.join(work.dir, name);
  fs.cpSync(DEMO, dir, { recursive: true });
  edit(dir);
  return dir;
}

function editJson(file: string, edit: (json: Record<string, any>) => void): void {
  const json = JSON.parse(fs.readFileSync(file, 'utf8'));
  edit(json);
  fs.writeFileSync(file, JSON.stringify(json));
}

function webgrpo(args: string[]): { proc: ChildProcess; stderr: () => string; exited: Promise<{ code: number | null; signal: string | null; at: number }> } {
  const proc = spawn(process.execPath, [path.join(ROOT, 'bin/webgrpo.js'), ...args], { cwd: ROOT, env: { ...process.env, WEBGPU_ADAPTER: process.env.WEBGPU_ADAPTER ?? 'lavapipe' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString('utf8')));
  proc.stdout!.resume();
  const exited = new Promise<{ code: number | null; signal: string | null; at: number }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal, at: performance.now() })));
  return { proc, stderr: () => err, exited };
}

/** CPU seconds a process has used (Linux /proc; utime + stime in clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** Whether a process has a handler installed for SIGTERM (bit 15 of SigCgt in /proc/PID/status). */
function catchesSigterm(pid: number): boolean {
  try {
    const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!;
    return (BigInt(`0x${mask}`) & (1n << 14n)) !== 0n;
  } catch {
    return false;
  }
}

beforeAll(() => {
  work = tempDir('webgrpo-hostile-model-');
});

afterAll(() => work?.cleanup());

describe('a chat template that loops forever', () => {
  it('fails `render` within 60 s, naming the template file and its budget', async () => {
    const model = hostileModel('template-loop', (dir) => fs.writeFileSync(path.join(dir, 'chat_template.jinja'), LOOP_FOREVER));
    const cli = webgrpo(['render', '--model', model, '--env', 'echo', '--text']);
    const started = performance.now();
    const timer = setTimeout(() => cli.proc.kill('SIGKILL'), 60_000);
    const { code, at } = await cli.exited;
    clearTimeout(timer);
    expect(at - started, cli.stderr()).toBeLessThan(60_000);
    expect(code).toBe(1);
    expect(cli.stderr()).toContain(`chat template (${model}/chat_template.jinja) exceeded its render budget (`);
  });

  it('`train` stuck in it stops within 15 s of SIGTERM', async () => {
    const model = hostileModel('template-loop-train', (dir) => fs.writeFileSync(path.join(dir, 'chat_template.jinja'), LOOP_FOREVER));
    const cli = webgrpo(['train', '--model', model, '--env', 'echo', '--max_steps', '1']);
    // Stuck = train has its SIGTERM handler (so the signal is not simply fatal) and has burnt 3 CPU
    // seconds (start-up takes ~2): it is loading or spinning in the template, and never leaves it
    // without the render budget.
    let exitedEarly = false;
    void cli.exited.then(() => (exitedEarly = true));
    while (!exitedEarly && !(catchesSigterm(cli.proc.pid!) && cpuSeconds(cli.proc.pid!) >= 3)) await new Promise((r) => setTimeout(r, 100));
    const signalled = performance.now();
    cli.proc.kill('SIGTERM');
    const timer = setTimeout(() => cli.proc.kill('SIGKILL'), 30_000);
    const { signal, at } = await cli.exited;
    clearTimeout(timer);
    expect(signal, cli.stderr()).not.toBe('SIGKILL');
    expect(at - signalled, cli.stderr()).toBeLessThan(15_000);
    expect(cli.stderr()).toMatch(new RegExp(`chat template \\(${model}/chat_template\\.jinja\\) exceeded its render budget|SIGTERM`));
  });
});

describe('model files whose sizes are hostile fail fast, naming the file and the limit', () => {
  it('config.json with num_hidden_layers 1e6', async () => {
    const model = hostileModel('config-layers', (dir) => editJson(path.join(dir, 'config.json'), (c) => (c.num_hidden_layers = 1_000_000)));
    await expect(openCheckpoint(model)).rejects.toThrow(`${model}/config.json: num_hidden_layers 1000000 is over webgrpo's limit of 1024`);
  });

  it('config.json with hidden_size and vocab_size far past any model', async () => {
    const big = hostileModel('config-sizes', (dir) => editJson(path.join(dir, 'config.json'), (c) => (c.vocab_size = 1e9)));
    await expect(openCheckpoint(big)).rejects.toThrow(/config\.json: vocab_size 1000000000 is over webgrpo's limit of \d+/);
  });

  it('a safetensors header of 10^6 tensors is refused from its 8-byte length, before it is read', async () => {
    const model = hostileModel('safetensors-header', (dir) => {
      const entries = Array.from({ length: 1_000_000 }, (_, i) => `"t${i}":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`);
      const body = Buffer.from(`{${entries.join(',')}}`);
      const header = Buffer.alloc(8);
      header.writeBigUInt64LE(BigInt(body.byteLength));
      fs.writeFileSync(path.join(dir, 'model.safetensors'), Buffer.concat([header, body]));
    });
    const headerBytes = fs.statSync(path.join(model, 'model.safetensors')).size - 8;
    await expect(openCheckpoint(model)).rejects.toThrow(`${model}/model.safetensors: header length ${headerBytes} exceeds webgrpo's ${MAX_HEADER_BYTES}-byte limit`);
  });

  it('a tokenizer.json Split pattern with catastrophic backtracking is refused, naming it', async () => {
    const model = hostileModel('tokenizer-regex', (dir) => editJson(path.join(dir, 'tokenizer.json'), (t) => (t.pre_tokenizer.pretokenizers[0].pattern.Regex = '(\\s*\\S*)*$x')));
    await expect(loadCheckpointTokenizer(nodeFolderFiles(model), model)).rejects.toThrow(
      `${model}/tokenizer.json: pre_tokenizer.pretokenizers[0].pattern.Regex "(\\\\s*\\\\S*)*$x" repeats a repeated sub-pattern (star height 2, limit 1)`,
    );
  });

  it('an oversized tokenizer.json is refused by its size, unread', async () => {
    const model = hostileModel('tokenizer-size', (dir) => {
      const file = path.join(dir, 'tokenizer.json');
      fs.truncateSync(file, 65 * 1024 * 1024); // sparse: no disk, and webgrpo must not read it
    });
    await expect(loadCheckpointTokenizer(nodeFolderFiles(model), model)).rejects.toThrow(`${model}/tokenizer.json: 68157440 bytes is over webgrpo's 67108864-byte limit for tokenizer.json`);
  });

  it('an oversized chat_template.jinja is refused by its size', async () => {
    const model = hostileModel('template-size', (dir) => fs.writeFileSync(path.join(dir, 'chat_template.jinja'), 'x'.repeat(2 * 1024 * 1024)));
    await expect(loadCheckpointTokenizer(nodeFolderFiles(model), model)).rejects.toThrow(`${model}/chat_template.jinja: 2097152 bytes is over webgrpo's 1048576-byte limit`);
  });
});
