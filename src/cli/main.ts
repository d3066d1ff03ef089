// `webgrpo <command> …`: each command lives in its own module, loaded on demand so one command's
// dependencies (WebGPU, SQLite) never slow down another.

type CommandModule = { run(argv: string[]): Promise<number> };

// The benchmarks are not part of the production CLI: `bench` loads their own entry by path at run
// time, so nothing under src/ imports bench/ (tests/unit/import-cycles.test.ts keeps it so).
const BENCH_ENTRY = new URL('../../bench/main.ts', import.meta.url).href;

const COMMANDS: Record<string, { module: () => Promise<CommandModule>; help: string }> = {
  'env-server': { module: () => import('./env-server.ts'), help: 'serve the built-in OpenEnv environments and proxies' },
  'make-tiny-model': { module: () => import('./make-tiny-model.ts'), help: 'write a deterministic random Qwen3 checkpoint' },
  score: { module: () => import('./score.ts'), help: 'per-token log-probs, entropies (and gradients) of given ids' },
  generate: { module: () => import('./generate.ts'), help: 'sample completions from a model' },
  render: { module: () => import('./render.ts'), help: 'print the exact prompt an environment gives the model' },
  train: { module: () => import('./train.ts'), help: 'GRPO (and SFT warm-up) training, one JSON line per step' },
  eval: { module: () => import('./eval.ts'), help: 'play held-out episodes: success with its interval, trajectories, --compare' },
  export: { module: () => import('./export.ts'), help: 'write a trained model for transformers.js (ONNX)' },
  bench: { module: () => import(BENCH_ENTRY) as Promise<CommandModule>, help: 'run the benchmarks in bench/' },
  start: { module: () => import('./start.ts'), help: 'the app: env-server + run store + built web UI' },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(16)} ${c.help}`);
  return `usage: webgrpo <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nRun \`webgrpo <command> --help\` for a command's options. Commands that use the GPU name their WebGPU adapter
on their first stderr line (a hardware GPU, else lavapipe, else SwiftShader; WEBGPU_ADAPTER=swiftshader|lavapipe to pick).`;
}

/** How long a command that stops gracefully on a signal (train saves a checkpoint) may take before the process exits anyway. */
const FORCE_EXIT_MS = 5_000;
const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;

/**
 * Ctrl-C and SIGTERM stop every command within seconds: one with no handler of its own exits at
 * once; one that stops gracefully (train, env-server, start) gets FORCE_EXIT_MS, then the process
 * exits whatever it is doing. (Synchronous work that could outlast this, such as a chat template's
 * render, runs under a budget of its own: no handler runs until it returns.) Installed by the
 * `webgrpo` process (bin/webgrpo.js), not by `run`, which tests also call in-process.
 */
export function exitOnSignals(): void {
  for (const [signal, code] of Object.entries(SIGNAL_EXIT_CODES)) {
    process.on(signal, () => {
      if (process.listenerCount(signal) === 1) process.exit(code);
      setTimeout(() => process.exit(code), FORCE_EXIT_MS).unref();
    });
  }
}

export async function run(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h') {
    console.log(usage());
    return name ? 0 : 1;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`webgrpo: unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  try {
    return await (await command.module()).run(rest);
  } catch (err) {
    console.error(`webgrpo ${name}: ${err instanceof Error ? err.message : String(err)}`);
    if (process.env.WEBGRPO_DEBUG && err instanceof Error) console.error(err.stack);
    return 1;
  }
}
