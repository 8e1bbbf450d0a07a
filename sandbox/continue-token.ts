/** The `continue` token of a paged list: the snapshot's resourceVersion and the key to start after. */

interface ContinueToken {
  rv: number;
  start: string;
}

export function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start })).toString('base64url');
}

export function decodeContinue(tok: string): ContinueToken | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(tok, 'base64url').toString('utf8'));
    if (typeof v !== 'object' || v === null) return undefined;
    const o = v as Record<string, unknown>;
    if (o['v'] !== 'meta.k8s.io/v1' || typeof o['rv'] !== 'number' || typeof o['start'] !== 'string') return undefined;
    return { rv: o['rv'], start: o['start'] };
  } catch {
    return undefined;
  }
}
