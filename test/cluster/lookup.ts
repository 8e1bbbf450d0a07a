/**
 * Lookups from client pods of the real-node suite (dns.test.ts, node-local.test.ts): the C
 * library's answer (`resolve hosts`, images/resolve.c) and dig's, both through the pod's own
 * /etc/resolv.conf unless dig is given a server.
 */
import { type ClusterEnv, execIn } from './cluster.js';

/** `resolve hosts NAME` in a client pod: the addresses its C library returned (empty: not found). */
export async function resolveHosts(env: ClusterEnv, ns: string, client: string, name: string): Promise<string[]> {
  const r = await execIn(env, ns, client, ['resolve', 'hosts', name]);
  if (r.code === 2) return [];
  if (r.code !== 0) throw new Error(`resolve hosts ${name} in ${ns}/${client}: exit ${r.code}: ${r.stderr}${r.stdout}`);
  return [
    ...new Set(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(' ')[0] ?? ''),
    ),
  ];
}

export interface DigResult {
  readonly status: string;
  /** The header flags (`qr aa rd ra`), sorted. */
  readonly flags: string;
  /** Answer records without their TTL, in the server's order. */
  readonly answers: string[];
  /** Authority records without their TTL, the SOA's serial as `SERIAL`. */
  readonly authority: string[];
}

/** A record line of dig's output without its TTL (the second field). */
export function withoutTTL(line: string): string {
  return line
    .split(/\s+/)
    .filter((_, i) => i !== 1)
    .join(' ');
}

/** dig in a client pod, through the pod's /etc/resolv.conf: status, flags, answer and authority. */
export async function digIn(env: ClusterEnv, ns: string, client: string, args: string[]): Promise<DigResult> {
  const r = await execIn(env, ns, client, [
    'dig',
    '+time=3',
    '+tries=2',
    '+noall',
    '+comments',
    '+answer',
    '+authority',
    ...args,
  ]);
  if (r.code !== 0) throw new Error(`dig ${args.join(' ')} in ${ns}/${client}: exit ${r.code}: ${r.stdout}${r.stderr}`);
  const status = /status: (\w+)/.exec(r.stdout)?.[1] ?? 'none';
  const flags = (/;; flags: ([a-z ]*);/.exec(r.stdout)?.[1] ?? '').trim().split(' ').sort().join(' ');
  const answers: string[] = [];
  const authority: string[] = [];
  let section: string[] = answers;
  for (const l of r.stdout.split('\n')) {
    if (l.startsWith(';; ANSWER SECTION')) section = answers;
    else if (l.startsWith(';; AUTHORITY SECTION')) section = authority;
    else if (l !== '' && !l.startsWith(';')) section.push(withoutTTL(l));
  }
  return {
    status,
    flags,
    answers,
    // SOA: mname rname serial refresh retry expire minimum; the serial is each server's own.
    authority: authority.map((a) => a.replace(/^(\S+ IN SOA \S+ \S+ )\d+/, '$1SERIAL')),
  };
}
