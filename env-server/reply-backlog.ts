// Reply bytes the server has queued for its clients and not yet handed to the kernel, over every
// socket. Each socket's own backlog is bounded (--max-send-buffer-bytes), but a reply can be much
// larger than the request behind it (an echo of a 15 MiB message is ~45 MB): 24 sessions each
// awaiting one such reply held 2.7 GiB. Past this budget a reply is refused with an error frame
// rather than queued. Read from the sockets themselves (ws's bufferedAmount), so nothing can leak.

import type { WebSocket } from 'ws';

/** Default budget of queued reply bytes across all sessions. */
export const DEFAULT_MAX_REPLY_BACKLOG_BYTES = 256 * 1024 * 1024;

export class ReplyBacklog {
  private readonly sockets = new Set<WebSocket>();

  constructor(readonly maxBytes: number) {}

  /** Counts `ws`'s unsent bytes until it closes. */
  track(ws: WebSocket): void {
    this.sockets.add(ws);
    ws.once('close', () => this.sockets.delete(ws));
  }

  /** Unsent reply bytes, all sockets. */
  get bytes(): number {
    let total = 0;
    for (const ws of this.sockets) total += ws.bufferedAmount;
    return total;
  }
}
