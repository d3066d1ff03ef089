// An env server's HTTP reply, read under a byte cap: a broken or hostile server (a remote Space, an
// upstream nobody checked) cannot grow the trainer's memory without bound. WebSocket replies have the
// same bound from `ws`'s maxPayload; this is the HTTP routes' (/reset, /step, /mcp, /metadata, /schema).

import { OpenEnvError } from './errors.ts';

/** The env-server's own message limit (`--max-message-bytes`): no real reply comes near it. */
export const MAX_HTTP_REPLY_BYTES = 16 * 1024 * 1024;

/** The reply's text, or a PROTOCOL error naming `where` and the cap once more bytes than that arrive. */
export async function replyText(res: Response, where: string, maxBytes = MAX_HTTP_REPLY_BYTES): Promise<string> {
  const tooLarge = (bytes: string) => new OpenEnvError('PROTOCOL', `Reply to ${where} is ${bytes} bytes, over the ${maxBytes} bytes an env reply may have`);
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => {});
    throw tooLarge(String(declared));
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    bytes += value.byteLength;
    if (bytes > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(`more than ${maxBytes}`);
    }
    text += decoder.decode(value, { stream: true });
  }
}
