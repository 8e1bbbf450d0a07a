/**
 * The output of `dnslat` (scripts/cluster/images/dnslat.c, in the client-glibc image): per server,
 * how many of the rounds were answered and the quantiles of the answer time, measured from just
 * before the send to the kernel's arrival stamp of the reply.
 */

export interface Latency {
  readonly server: string;
  readonly rounds: number;
  readonly answered: number;
  readonly failed: number;
  /** Microseconds; absent when nothing was answered. */
  readonly p50Us?: number;
  readonly p90Us?: number;
  readonly p99Us?: number;
  readonly minUs?: number;
  readonly maxUs?: number;
}

/** One `server S name N rounds R answered A failed F p50_us X …` line per server, in order. */
export function parseDnslat(text: string): Latency[] {
  const out: Latency[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('server ')) continue;
    const words = line.trim().split(/\s+/);
    const kv = new Map<string, string>();
    for (let i = 0; i + 1 < words.length; i += 2) kv.set(words[i] ?? '', words[i + 1] ?? '');
    const num = (k: string): number | undefined => (kv.has(k) ? Number(kv.get(k)) : undefined);
    out.push({
      server: kv.get('server') ?? '',
      rounds: num('rounds') ?? 0,
      answered: num('answered') ?? 0,
      failed: num('failed') ?? 0,
      p50Us: num('p50_us'),
      p90Us: num('p90_us'),
      p99Us: num('p99_us'),
      minUs: num('min_us'),
      maxUs: num('max_us'),
    });
  }
  return out;
}
