// Base URL → WebSocket URL, as OpenEnv's clients map it (specs/openenv-protocol.md §7).

/**
 * `http://h:1/p/` → `ws://h:1/p/ws`, `https://h` → `wss://h/ws`, `ws(s)://…` kept, no scheme → `ws://`.
 * One trailing `/` is stripped; paths are kept.
 */
export function wsUrl(baseUrl: string): string {
  if (typeof baseUrl !== 'string' || baseUrl.trim() === '') {
    throw new Error(`OpenEnv base URL must be a non-empty string, got ${JSON.stringify(baseUrl)}`);
  }
  let url = baseUrl.trim();
  if (url.endsWith('/')) url = url.slice(0, -1);
  if (url.startsWith('http://')) url = 'ws://' + url.slice('http://'.length);
  else if (url.startsWith('https://')) url = 'wss://' + url.slice('https://'.length);
  else if (!url.startsWith('ws://') && !url.startsWith('wss://')) {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
      throw new Error(`OpenEnv base URL has an unsupported scheme (want http, https, ws or wss): ${baseUrl}`);
    }
    url = 'ws://' + url;
  }
  return url + '/ws';
}
