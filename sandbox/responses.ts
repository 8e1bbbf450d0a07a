/** What the sandbox sends: JSON bodies, Kubernetes `Status` objects for errors, and large lists in chunks. */
import type * as http from 'node:http';
import type { JsonObject } from './resources.js';

export const JSON_HEADERS = { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' };

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Expired',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

export function statusObject(code: number, message: string, extra: JsonObject = {}): JsonObject {
  const reason = REASONS[code];
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    ...(reason ? { reason } : {}),
    ...extra,
    code,
  };
}

export function sendJson(res: http.ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { ...JSON_HEADERS, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendStatus(res: http.ServerResponse, code: number, message: string, extra: JsonObject = {}): void {
  sendJson(res, code, statusObject(code, message, extra));
}

/** Write `items` to res in ~256 KiB chunks, waiting for 'drain' between chunks. */
export async function writeChunks(res: http.ServerResponse, parts: Iterable<string>): Promise<boolean> {
  let buf = '';
  for (const p of parts) {
    buf += p;
    if (buf.length >= 256 * 1024) {
      if (res.destroyed || res.writableEnded) return false;
      const ok = res.write(buf);
      buf = '';
      if (!ok) {
        const drained = await new Promise<boolean>((resolve) => {
          const onDrain = (): void => {
            res.off('close', onClose);
            resolve(true);
          };
          const onClose = (): void => {
            res.off('drain', onDrain);
            resolve(false);
          };
          res.once('drain', onDrain);
          res.once('close', onClose);
        });
        if (!drained) return false;
      }
    }
  }
  if (res.destroyed || res.writableEnded) return false;
  if (buf.length > 0) res.write(buf);
  return true;
}
