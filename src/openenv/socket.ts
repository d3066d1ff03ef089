// One WebSocket constructor for both worlds: the browser's global one, or `ws` in Node 20 (which has
// no stable global WebSocket). Both expose the same event-target API, which is all the client uses.

export interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open', listener: () => void): void;
  addEventListener(type: 'message', listener: (ev: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (ev: { code: number; reason: string }) => void): void;
  addEventListener(type: 'error', listener: (ev: { message?: string; error?: unknown }) => void): void;
}

export const SOCKET_OPEN = 1;

type SocketConstructor = new (url: string) => SocketLike;

let nodeWebSocket: SocketConstructor | undefined;

async function socketConstructor(): Promise<SocketConstructor> {
  const global = (globalThis as { WebSocket?: SocketConstructor }).WebSocket;
  if (global) return global;
  if (!nodeWebSocket) {
    // A variable specifier keeps bundlers from pulling `ws` (Node-only) into browser builds.
    const specifier = 'ws';
    const mod = (await import(/* @vite-ignore */ specifier)) as { default: SocketConstructor };
    nodeWebSocket = mod.default;
  }
  return nodeWebSocket;
}

/** Starts opening a socket; listen for `open`/`error`/`close` to learn how it went. */
export async function createSocket(url: string): Promise<SocketLike> {
  const Ctor = await socketConstructor();
  return new Ctor(url);
}
