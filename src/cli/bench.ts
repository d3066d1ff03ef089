// `webgrpo bench [env-server|engine|train|all]`: runs the benchmarks in bench/ and prints one JSON
// object per benchmark. With `--out DIR` each result is also written to DIR/<name>.json; the numbers
// in BENCHMARKS.md come from these files (with the machine and adapter they name).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

type Bench = (opts: Record<string, string>) => Promise<unknown>;

const BENCHES: Record<string, { load: () => Promise<Bench>; help: string }> = {
  'env-server': {
    load: async () => {
      const { benchEnvServer, parseBenchEnvServerArgs } = await import('../../bench/env-server/run.ts');
      return (opts) => benchEnvServer(parseBenchEnvServerArgs(Object.entries(opts).flatMap(([k, v]) => [`--${k}`, v])));
    },
    help: 'N concurrent sessions × M echo steps on loopback: steps/s, p50/p99 latency, leaks',
  },
  browsergym: {
    load: async () => {
      const { benchBrowserGym, parseBenchBrowserGymArgs } = await import('../../bench/env-server/browsergym.ts');
      return (opts) => benchBrowserGym(parseBenchBrowserGymArgs(Object.entries(opts).flatMap(([k, v]) => [`--${k}`, v])));
    },
    help: 'browsergym sessions at the cap: resets/s, steps/s, p50/p99, Chromium RSS per session, leaked contexts',
  },
  engine: {
    load: async () => (await import('../../bench/engine/forward.ts')).benchEngineForward as Bench,
    help: 'prefill/decode tokens/s for B=1 and B=8, dispatches per decode step, best matmul GFLOP/s',
  },
  train: {
    load: async () => (await import('../../bench/engine/train-step.ts')).benchTrainStep as Bench,
    help: 'train-step time and achieved GFLOP/s vs the matmul peak',
  },
};

const HELP = `usage: webgrpo bench [${Object.keys(BENCHES).join('|')}|all] [--out DIR] [--KEY VALUE …]

${Object.entries(BENCHES).map(([k, b]) => `  ${k.padEnd(11)} ${b.help}`).join('\n')}
Extra --KEY VALUE pairs are passed to the benchmark (e.g. --sessions 256 --steps 50).`;

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(HELP);
    return 0;
  }
  const which = argv[0] && !argv[0].startsWith('--') ? argv[0] : 'all';
  const names = which === 'all' ? Object.keys(BENCHES) : [which];
  for (const n of names) if (!BENCHES[n]) throw new Error(`unknown benchmark '${n}'\n\n${HELP}`);
  const opts: Record<string, string> = {};
  let outDir: string | null = null;
  for (let i = which === argv[0] ? 1 : 0; i < argv.length; i++) {
    const m = /^--(.+)$/.exec(argv[i]);
    if (!m || argv[i + 1] === undefined) throw new Error(`expected --KEY VALUE, got '${argv[i]}'`);
    if (m[1] === 'out') outDir = argv[++i];
    else opts[m[1]] = argv[++i];
  }
  const machine = { cpus: os.cpus().length, cpu: os.cpus()[0]?.model ?? '', memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version, platform: `${os.platform()} ${os.release()}` };
  for (const name of names) {
    console.error(`webgrpo bench: running ${name}…`);
    const result = { bench: name, date: new Date().toISOString(), machine, result: await (await BENCHES[name].load())(opts) };
    console.log(JSON.stringify(result));
    if (outDir) {
      fs.mkdirSync(outDir, { recursive: true });
      fs.writeFileSync(path.join(outDir, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
    }
  }
  return 0;
}
