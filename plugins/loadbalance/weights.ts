/**
 * The `weighted` policy's WEIGHTFILE: a domain-name line followed by `IP WEIGHT` lines (weight
 * 1..255), `#` comments. Re-read when its modification time or size changes.
 */
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { canonicalIP, fqdn, isDomainName } from '../../src/dns/name.js';

/** lower-cased absolute name → canonical IP → weight. */
export type Weights = Map<string, Map<string, number>>;

export function parseWeights(text: string): Weights {
  const out: Weights = new Map();
  let current: Map<string, number> | null = null;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/#.*$/, '').trim();
    if (line === '') continue;
    const fields = line.split(/\s+/);
    if (fields.length === 1) {
      const name = fqdn(fields[0]!.toLowerCase());
      if (isIP(fields[0]!) !== 0 || !isDomainName(name))
        throw new Error(`line ${i + 1}: wrong domain name '${fields[0]}'`);
      current = out.get(name) ?? new Map<string, number>();
      out.set(name, current);
      continue;
    }
    if (fields.length !== 2) throw new Error(`line ${i + 1}: expected 'IP WEIGHT'`);
    if (!current) throw new Error(`line ${i + 1}: missing domain name`);
    const ip = canonicalIP(fields[0]!);
    if (!ip) throw new Error(`line ${i + 1}: wrong IP address '${fields[0]}'`);
    const w = Number(fields[1]);
    if (!/^\d+$/.test(fields[1]!) || w < 1 || w > 255)
      throw new Error(`line ${i + 1}: wrong weight value '${fields[1]}'`);
    current.set(ip, w);
  }
  return out;
}

export class WeightFile {
  weights: Weights = new Map();
  private mtimeMs = -1;
  private size = -1;

  constructor(readonly path: string) {}

  /** Load the file if it changed; throws on a read or syntax error. */
  load(): boolean {
    const st = statSync(this.path);
    if (st.mtimeMs === this.mtimeMs && st.size === this.size) return false;
    this.weights = parseWeights(readFileSync(this.path, 'utf8'));
    this.mtimeMs = st.mtimeMs;
    this.size = st.size;
    return true;
  }
}
