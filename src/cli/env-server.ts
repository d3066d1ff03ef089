// `webgrpo env-server`: serves the built-in OpenEnv environments (echo, catch, wordle) and any
// `--upstream` proxies until SIGINT/SIGTERM. Prints one JSON line with the URLs once listening.

import { createRequestPolicy } from '../../env-server/origin-policy.ts';
import { replicaUrlProblem } from '../../env-server/proxy.ts';
import { createEnvServer, type EnvServerOptions } from '../../env-server/server.ts';
import { parseCli, str, type OptionTable, type Parsed as ParsedArgs } from './args.ts';

const HELP = `usage: webgrpo env-server [options]

Serves OpenEnv environments: built-ins at /envs/echo, /envs/catch, /envs/wordle (WebSocket at
<base>/ws), proxies at /envs/<NAME>. Also GET /health and GET /envs.

options:
  --host H                    bind address (default 127.0.0.1)
  --port P                    port (default 8000; 0 = any free port)
  --max-concurrent-envs N     sessions per env, per replica for upstreams
                              (default $MAX_CONCURRENT_ENVS, else 64)
  --queue                     over the cap, hold new sessions until a slot frees
                              (default: refuse at once with CAPACITY_REACHED, as OpenEnv)
  --queue-timeout S           longest wait in the queue, seconds (default 30)
  --session-timeout S         idle timeout for every session, seconds (default off: the
                              WebSocket heartbeat drops dead clients; live ones may be slow)
  --proxy-session-timeout S   idle timeout for proxied sessions only (default: --session-timeout)
  --max-message-bytes N       largest client message / HTTP body (default 16777216)
  --max-send-buffer-bytes N   unread reply bytes at which a client that stops reading is
                              dropped (default 16777216)
  --max-reply-backlog-bytes N  unsent reply bytes of all clients together past which a
                              reply is refused with an error frame (default 268435456)
  --max-pending-bytes N       bytes of frames kept for a socket still queued or dialing
                              upstream; past it the socket gets SESSION_ERROR (default 1048576)
  --max-json-depth N          deepest nesting accepted in client JSON (default 256)
  --mcp-session-timeout S     idle timeout for sessions opened by openenv/session/create over
                              HTTP /mcp, seconds (default 60; --session-timeout overrides);
                              such sessions hold at most half of each env's slots
  --upstream NAME=URL[,URL…]  proxy a remote OpenEnv server (replicas: least loaded first);
                              repeatable. Each replica's /health and /metadata are probed at
                              startup: a malformed URL is an error, an unreachable one a warning
                              (GET /envs says reachable: false, with the reason)
  --allow-host NAME           also answer to this Host name (default: loopback names and
                              addresses and --host only; others get 421); repeatable
  --allow-origin ORIGIN       also trust web pages at this origin (e.g. http://localhost:5173);
                              default: only the server's own and non-browser clients; repeatable
  --miniwob DIR|URL           /envs/browsergym serves a real MiniWoB++ html/miniwob/ folder (or an
                              http(s) URL of one, fetched by the server) instead of the 21 built-in
                              tasks: every task in it by name, BrowserGym's episodes (default $MINIWOB_URL)
  --axtree browsergym|classic the browsergym tree's form when reset names none (default
                              $BROWSERGYM_AXTREE, else browsergym: the real server's trees)
  --verbose                   one line per session opened and closed (default: warnings only)
  --help                      this text`;

type Parsed = { options: EnvServerOptions & { port: number } } | { help: true };

function numberArg(flag: string, value: string | undefined, { integer, min }: { integer: boolean; min: number }): number {
  if (value === undefined) throw new Error(`${flag} needs a value`);
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min) {
    throw new Error(`${flag}: expected ${integer ? 'an integer' : 'a number'} ≥ ${min}, got '${value}'`);
  }
  return n;
}

function parseUpstream(value: string | undefined): [string, string[]] {
  const match = value === undefined ? null : /^([^=]+)=(.+)$/.exec(value);
  if (!match) throw new Error(`--upstream: expected NAME=URL[,URL…], got '${value ?? ''}'`);
  const urls = match[2].split(',').map((u) => u.trim()).filter((u) => u !== '');
  if (urls.length === 0) throw new Error(`--upstream ${match[1]}: no URL given`);
  for (const url of urls) {
    const problem = replicaUrlProblem(url);
    if (problem) throw new Error(`--upstream ${match[1]}=${url}: ${problem}`);
  }
  return [match[1], urls];
}

/** The flags (util.parseArgs table); `start` accepts them too. */
export const ENV_SERVER_OPTIONS: OptionTable = {
  host: { type: 'string' },
  port: { type: 'string' },
  'max-concurrent-envs': { type: 'string' },
  queue: { type: 'boolean' },
  'queue-timeout': { type: 'string' },
  'session-timeout': { type: 'string' },
  'proxy-session-timeout': { type: 'string' },
  'max-message-bytes': { type: 'string' },
  'max-send-buffer-bytes': { type: 'string' },
  'max-pending-bytes': { type: 'string' },
  'max-reply-backlog-bytes': { type: 'string' },
  'max-json-depth': { type: 'string' },
  'mcp-session-timeout': { type: 'string' },
  upstream: { type: 'string', multiple: true },
  'allow-host': { type: 'string', multiple: true },
  'allow-origin': { type: 'string', multiple: true },
  miniwob: { type: 'string' },
  axtree: { type: 'string' },
  verbose: { type: 'boolean' },
};

/**
 * The envs to serve when `--miniwob` / $MINIWOB_URL or `--axtree` changes browsergym; undefined
 * keeps the built-ins as they are. A folder that is missing or lists no task is an error here, at start.
 */
export async function browsergymEnvs(p: ParsedArgs, env: NodeJS.ProcessEnv = process.env): Promise<EnvServerOptions['envs']> {
  const spec = str(p, 'miniwob') ?? (env.MINIWOB_URL || undefined);
  const axtree = str(p, 'axtree');
  if (spec === undefined && axtree === undefined) return undefined;
  const [{ BUILTIN_ENVS }, { createBrowserGymEnv }, { miniwobSource }, { parseAxtreeForm }] = await Promise.all([
    import('../../env-server/envs/index.ts'),
    import('../../env-server/envs/browsergym/index.ts'),
    import('../../env-server/envs/browsergym/miniwob-source.ts'),
    import('../../env-server/envs/browsergym/axtree.ts'),
  ]);
  const browsergym = createBrowserGymEnv(
    { miniwob: spec === undefined ? undefined : await miniwobSource(spec), axtree: axtree === undefined ? undefined : parseAxtreeForm(axtree, '--axtree') },
    env,
  );
  return { ...BUILTIN_ENVS, browsergym };
}

export function parseEnvServerArgs(argv: string[]): Parsed {
  const p = parseCli(argv, ENV_SERVER_OPTIONS);
  return p.help ? { help: true } : { options: envServerOptions(p) };
}

/** Server options from parsed ENV_SERVER_OPTIONS flags, each checked by name. */
export function envServerOptions(p: ParsedArgs): EnvServerOptions & { port: number } {
  const options: EnvServerOptions & { port: number } = { port: 8000, upstreams: {} };
  const value = (name: string) => str(p, name);
  const host = value('host');
  if (host !== undefined) {
    if (!host) throw new Error('--host needs a value');
    options.host = host;
  }
  if (value('port') !== undefined) {
    options.port = numberArg('--port', value('port'), { integer: true, min: 0 });
    if (options.port > 65535) throw new Error(`--port: expected 0..65535, got ${options.port}`);
  }
  if (value('max-concurrent-envs') !== undefined) options.maxConcurrentEnvs = numberArg('--max-concurrent-envs', value('max-concurrent-envs'), { integer: true, min: 1 });
  if (p.values.queue === true) options.queue = true;
  if (p.values.verbose === true) options.logSessions = true;
  if (value('queue-timeout') !== undefined) options.queueTimeoutMs = numberArg('--queue-timeout', value('queue-timeout'), { integer: false, min: 0.001 }) * 1000;
  if (value('session-timeout') !== undefined) options.sessionTimeoutSec = numberArg('--session-timeout', value('session-timeout'), { integer: false, min: 0.001 });
  if (value('proxy-session-timeout') !== undefined) {
    options.proxySessionTimeoutSec = numberArg('--proxy-session-timeout', value('proxy-session-timeout'), { integer: false, min: 0.001 });
  }
  if (value('max-message-bytes') !== undefined) options.maxMessageBytes = numberArg('--max-message-bytes', value('max-message-bytes'), { integer: true, min: 1 });
  if (value('max-send-buffer-bytes') !== undefined) options.maxSendBufferBytes = numberArg('--max-send-buffer-bytes', value('max-send-buffer-bytes'), { integer: true, min: 1 });
  if (value('max-reply-backlog-bytes') !== undefined) {
    options.maxReplyBacklogBytes = numberArg('--max-reply-backlog-bytes', value('max-reply-backlog-bytes'), { integer: true, min: 1 });
  }
  if (value('max-pending-bytes') !== undefined) options.maxPendingBytes = numberArg('--max-pending-bytes', value('max-pending-bytes'), { integer: true, min: 1 });
  if (value('max-json-depth') !== undefined) options.maxJsonDepth = numberArg('--max-json-depth', value('max-json-depth'), { integer: true, min: 1 });
  if (value('mcp-session-timeout') !== undefined) options.mcpSessionTimeoutSec = numberArg('--mcp-session-timeout', value('mcp-session-timeout'), { integer: false, min: 0.001 });
  const list = (name: string) => (p.values[name] as string[] | undefined) ?? [];
  // Checked here, not at the first request: createRequestPolicy names a bad value.
  if (list('allow-host').length > 0) options.allowHosts = list('allow-host');
  if (list('allow-origin').length > 0) options.allowOrigins = list('allow-origin');
  createRequestPolicy({ allowHosts: options.allowHosts, allowOrigins: options.allowOrigins });
  for (const spec of list('upstream')) {
    const [name, urls] = parseUpstream(spec);
    if (options.upstreams![name]) throw new Error(`--upstream ${name} given twice; list replicas comma-separated`);
    options.upstreams![name] = urls;
  }
  return options;
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseEnvServerArgs(argv);
  if ('help' in parsed) {
    console.log(HELP);
    return 0;
  }
  // A training run opens a session per episode: those lines only with --verbose.
  const server = await createEnvServer({ logSessions: false, ...parsed.options, envs: await browsergymEnvs(parseCli(argv, ENV_SERVER_OPTIONS)), logger: (line) => console.error(`[env-server] ${line}`) });
  const stats = server.stats();
  console.log(JSON.stringify({ url: server.url, envs: Object.keys(stats.envs).map((name) => `${server.url}/envs/${name}`) }));
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      console.error(`[env-server] ${signal}: closing sessions and shutting down`);
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      void server.close().then(resolve);
    };
    const onInt = () => stop('SIGINT');
    const onTerm = () => stop('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
  });
  return 0;
}
