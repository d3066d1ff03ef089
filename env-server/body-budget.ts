// One budget of request body bytes for all requests at once. Each body is limited on its own, but
// six 62 MiB imports at once are 372 MiB of buffers (and more once parsed): the budget counts every
// body's bytes as they arrive, keeps them counted until its response is done, and turns away (503)
// the request whose bytes would go past it, while they arrive, before anything parses them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyTooLargeError } from './http-util.ts';

export class BodyBudgetExhausted extends Error {
  constructor(readonly limit: number, flag: string) {
    super(`The server is busy: request bodies in flight would pass its limit of ${limit} bytes (${flag}); try again shortly`);
  }
}

export class BodyBudget {
  private used = 0;

  constructor(readonly limit: number, private readonly flag = '--max-inflight-body-bytes') {
    if (!(Number.isSafeInteger(limit) && limit >= 1)) throw new Error(`${flag} must be an integer ≥ 1, got ${limit}`);
  }

  /** Bytes counted now (bodies being read or still being handled). */
  get inFlight(): number {
    return this.used;
  }

  /**
   * Reads the whole body (up to `limit` bytes, else BodyTooLargeError), counting it against the budget
   * until `res` is finished or closed. Rejects with BodyBudgetExhausted as soon as a declared length or
   * the bytes received would pass the budget; what the request still sends is then read and dropped.
   */
  read(req: IncomingMessage, res: ServerResponse, limit: number, tooLarge: () => Error = () => new BodyTooLargeError(limit)): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      let counted = 0;
      const release = () => {
        this.used -= counted;
        counted = 0;
      };
      res.once('finish', release);
      res.once('close', release);
      const declared = Number(req.headers['content-length']);
      const refuse = (err: Error) => {
        chunks = null;
        release();
        req.resume();
        reject(err);
      };
      let chunks: Buffer[] | null = [];
      if (Number.isFinite(declared) && declared > limit) return refuse(tooLarge());
      if (Number.isFinite(declared) && this.used + declared > this.limit) return refuse(new BodyBudgetExhausted(this.limit, this.flag));
      req.on('data', (chunk: Buffer) => {
        if (chunks === null) return;
        if (counted + chunk.length > limit) return refuse(tooLarge());
        if (this.used + chunk.length > this.limit) return refuse(new BodyBudgetExhausted(this.limit, this.flag));
        counted += chunk.length;
        this.used += chunk.length;
        chunks.push(chunk);
      });
      req.on('end', () => {
        if (chunks !== null) resolve(Buffer.concat(chunks));
      });
      req.on('error', (err) => {
        if (chunks !== null) refuse(err);
      });
    });
  }
}
