// `webgrpo env-server`: serves the built-in OpenEnv environments (echo, catch, wordle) and any
// `--upstream` proxies until SIGINT/SIGTERM. Prints one JSON line with the URLs once listening.

import { createEnvServer, type EnvServerOptions } from '../../env-server/server.ts';

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
  --session-timeout S         idle timeout for built-in sessions, seconds (default off)
  --proxy-session-timeout S   idle timeout for proxied sessions, seconds (default 300)
  --max-message-bytes N       largest client message / HTTP body (default 16777216)
  --max-send-buffer-bytes N   unread reply bytes at which a client that stops reading is
                              dropped (default 16777216)
  --max-pending-bytes N       bytes of frames kept for a socket still queued or dialing
                              upstream; past it the socket gets SESSION_ERROR (default 1048576)
  --max-json-depth N          deepest nesting accepted in client JSON (default 256)
  --mcp-session-timeout S     idle timeout for sessions opened by openenv/session/create over
                              HTTP /mcp, seconds (default 600; --session-timeout overrides)
  --upstream NAME=URL[,URL…]  proxy a remote OpenEnv server (replicas: least loaded first);
                              repeatable
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
  return [match[1], urls];
}

export function parseEnvServerArgs(argv: string[]): Parsed {
  const options: EnvServerOptions & { port: number } = { port: 8000, upstreams: {} };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const next = () => argv[++i];
    switch (flag) {
      case '--help':
      case '-h':
        return { help: true };
      case '--host': {
        const host = next();
        if (!host) throw new Error('--host needs a value');
        options.host = host;
        break;
      }
      case '--port':
        options.port = numberArg(flag, next(), { integer: true, min: 0 });
        if (options.port > 65535) throw new Error(`--port: expected 0..65535, got ${options.port}`);
        break;
      case '--max-concurrent-envs':
        options.maxConcurrentEnvs = numberArg(flag, next(), { integer: true, min: 1 });
        break;
      case '--queue':
        options.queue = true;
        break;
      case '--queue-timeout':
        options.queueTimeoutMs = numberArg(flag, next(), { integer: false, min: 0.001 }) * 1000;
        break;
      case '--session-timeout':
        options.sessionTimeoutSec = numberArg(flag, next(), { integer: false, min: 0.001 });
        break;
      case '--proxy-session-timeout':
        options.proxySessionTimeoutSec = numberArg(flag, next(), { integer: false, min: 0.001 });
        break;
      case '--max-message-bytes':
        options.maxMessageBytes = numberArg(flag, next(), { integer: true, min: 1 });
        break;
      case '--max-send-buffer-bytes':
        options.maxSendBufferBytes = numberArg(flag, next(), { integer: true, min: 1 });
        break;
      case '--max-pending-bytes':
        options.maxPendingBytes = numberArg(flag, next(), { integer: true, min: 1 });
        break;
      case '--max-json-depth':
        options.maxJsonDepth = numberArg(flag, next(), { integer: true, min: 1 });
        break;
      case '--mcp-session-timeout':
        options.mcpSessionTimeoutSec = numberArg(flag, next(), { integer: false, min: 0.001 });
        break;
      case '--upstream': {
        const [name, urls] = parseUpstream(next());
        if (options.upstreams![name]) throw new Error(`--upstream ${name} given twice; list replicas comma-separated`);
        options.upstreams![name] = urls;
        break;
      }
      default:
        throw new Error(`unknown option '${flag}' (see --help)`);
    }
  }
  return { options };
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseEnvServerArgs(argv);
  if ('help' in parsed) {
    console.log(HELP);
    return 0;
  }
  const server = await createEnvServer({ ...parsed.options, logger: (line) => console.error(`[env-server] ${line}`) });
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
