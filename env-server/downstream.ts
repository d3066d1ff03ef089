// One client socket on `/envs/<name>/ws`, for its whole life: queued, in session, ended.
// Frames that arrive before the session is ready (while queued, or while the proxy dials) are kept
// and replayed in order, up to a byte bound. Every way a socket can end goes through end(), exactly
// once. Memory per socket is bounded both ways: kept frames (maxPendingBytes) and replies the client
// has not read yet (maxSendBufferBytes: past it the client is dropped as a slow reader). Replies
// have the clients' own per-message limit, and all sockets' unsent replies share one budget.

import type { WebSocket, RawData } from 'ws';
import { errorFrame, oversizedFrame, replyBacklogFullFrame, replyTooLargeFrame } from './frames.ts';
import type { ReplyBacklog } from './reply-backlog.ts';

export type FrameHandler = (data: Buffer, isBinary: boolean) => void;

export interface EndInfo {
  /** Why, for the session log: "close frame", "client closed 1000", "idle timeout", … */
  reason: string;
  /** The client's own close code when the client ended it (1005/1006 included). */
  clientCode?: number;
}

const CLOSE_NORMAL = 1000;
/** What one kept frame costs besides its bytes (so a flood of empty frames is bounded too). */
const PENDING_FRAME_OVERHEAD = 64;

export interface DownstreamLimits {
  /** Largest client message, in bytes; larger ones end the session with a SESSION_ERROR frame. */
  maxMessageBytes: number;
  /** Bytes of client frames kept before the session is ready (queued, proxy dialing). */
  maxPendingBytes: number;
  /** Unsent reply bytes at which a client that does not read is dropped. */
  maxSendBufferBytes: number;
  /** Unsent reply bytes of all sockets together, and their budget. */
  replyBacklog: ReplyBacklog;
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/**
 * The session log's words for a client ending its socket. A client that drops the connection without
 * a close frame (1006: a script that exits without closing its env client, a killed tab) or says it
 * is going away (1001) "went away": the usual end of a client's life, not a failure of the session.
 */
export function clientCloseReason(code: number): string {
  if (code === 1006) return 'client went away (no close frame, 1006)';
  if (code === 1001) return 'client went away (1001)';
  if (code === 1005) return 'client closed (no status code, 1005)';
  return `client closed ${code}`;
}

export class Downstream {
  private handler: FrameHandler | null = null;
  private readonly buffered: Array<[Buffer, boolean]> = [];
  private bufferedBytes = 0;
  private endInfo: EndInfo | null = null;
  private readonly endListeners: Array<(info: EndInfo) => void> = [];
  /** Cleared by each heartbeat ping, set by the pong: a socket that stays false is dead. */
  alive = true;

  constructor(
    readonly ws: WebSocket,
    /** Server-wide session number, for the log. */
    readonly id: number,
    private readonly limits: DownstreamLimits,
  ) {
    limits.replyBacklog.track(ws);
    ws.on('message', (data, isBinary) => this.onMessage(toBuffer(data), isBinary));
    ws.on('pong', () => (this.alive = true));
    ws.on('close', (code) => this.finish({ reason: clientCloseReason(code), clientCode: code }));
    // A socket error is always followed by 'close', which does the cleanup.
    ws.on('error', () => {});
  }

  get ended(): boolean {
    return this.endInfo !== null;
  }

  /** Starts delivering frames, oldest buffered first. */
  setHandler(handler: FrameHandler): void {
    this.handler = handler;
    const kept = this.buffered.splice(0);
    this.bufferedBytes = 0;
    for (const [data, isBinary] of kept) {
      if (this.ended) break;
      handler(data, isBinary);
    }
  }

  /**
   * Sends one frame. A client whose unread backlog already passed maxSendBufferBytes is cut off
   * instead (checked before sending, so one large reply still goes out to a client that reads).
   * A frame over maxMessageBytes, or one that would pass the budget of all sockets' unsent
   * replies, is replaced by a short error frame saying why: the session goes on, nothing piles up.
   */
  send(frame: string | Buffer, isBinary = false): void {
    if (this.ended || this.ws.readyState !== this.ws.OPEN) return;
    const backlog = this.ws.bufferedAmount;
    if (backlog > this.limits.maxSendBufferBytes) {
      this.terminate(`slow reader: ${backlog} bytes unread (--max-send-buffer-bytes ${this.limits.maxSendBufferBytes})`);
      return;
    }
    const bytes = typeof frame === 'string' ? Buffer.byteLength(frame) : frame.length;
    if (bytes > this.limits.maxMessageBytes) {
      this.ws.send(replyTooLargeFrame(bytes, this.limits.maxMessageBytes));
      return;
    }
    const budget = this.limits.replyBacklog;
    const queued = budget.bytes;
    if (queued + bytes > budget.maxBytes) {
      this.ws.send(replyBacklogFullFrame(bytes, queued, budget.maxBytes));
      return;
    }
    this.ws.send(frame, { binary: isBinary });
  }

  /** Sends `finalFrame` (if any), then closes with `code` (1000 and "" unless told otherwise). */
  end(reason: string, finalFrame?: string, code = CLOSE_NORMAL, closeReason = ''): void {
    if (this.ended) return;
    if (finalFrame !== undefined) this.send(finalFrame);
    this.finish({ reason });
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, closeReason);
  }

  /** Kills the TCP connection without a closing handshake (dead peer, forced shutdown). */
  terminate(reason: string): void {
    this.finish({ reason });
    this.ws.terminate();
  }

  /** Runs `listener` once when the socket ends (at once if it already has). Returns an unsubscribe. */
  onEnd(listener: (info: EndInfo) => void): () => void {
    if (this.endInfo) {
      listener(this.endInfo);
      return () => {};
    }
    this.endListeners.push(listener);
    return () => {
      const i = this.endListeners.indexOf(listener);
      if (i !== -1) this.endListeners.splice(i, 1);
    };
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (this.ended) return;
    if (data.length > this.limits.maxMessageBytes) {
      this.end(`message too large (${data.length} bytes)`, oversizedFrame(data.length, this.limits.maxMessageBytes));
      return;
    }
    if (this.handler) {
      this.handler(data, isBinary);
      return;
    }
    this.bufferedBytes += data.length + PENDING_FRAME_OVERHEAD;
    if (this.bufferedBytes > this.limits.maxPendingBytes) {
      const max = this.limits.maxPendingBytes;
      this.end(
        'too much sent before the session started',
        errorFrame('SESSION_ERROR', `Too much sent before the session started: more than ${max} bytes of frames kept while waiting (--max-pending-bytes); wait for each reply.`),
      );
      return;
    }
    this.buffered.push([data, isBinary]);
  }

  private finish(info: EndInfo): void {
    if (this.endInfo) return;
    this.endInfo = info;
    this.buffered.length = 0;
    this.bufferedBytes = 0;
    for (const listener of this.endListeners.splice(0)) listener(info);
  }
}
