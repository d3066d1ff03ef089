// `webgrpo start` without --port takes the first free port from 8000 up, as Vite does, so a second
// start (another checkout, a forgotten terminal) works and says where; an explicit --port is taken
// as meant: busy, it fails and says so.
import net from 'node:net';

/** Ports tried after the default one before giving up. */
export const PORT_TRIES = 20;

/** Whether `port` on `host` can be listened on now (the listener is closed again at once). */
export function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' || err.code === 'EACCES' ? resolve(false) : reject(err)));
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
}

/** The first free port of `first`, `first + 1`, … (PORT_TRIES of them), or an error naming the range. */
export async function firstFreePort(host: string, first: number): Promise<number> {
  for (let port = first; port < first + PORT_TRIES && port <= 65535; port++) if (await portFree(host, port)) return port;
  throw new Error(`Ports ${first}–${first + PORT_TRIES - 1} on ${host} are all in use: stop another server or pass --port`);
}

/** The error of a listen on a busy explicit --port, in words. */
export function portInUse(host: string, port: number): Error {
  return new Error(`--port ${port}: ${host}:${port} is already in use (another webgrpo start?): stop that server, or leave out --port to take the next free one`);
}
