/**
 * The kube-dns ConfigMap as node-cache reads it: the files of its mount directory (`-kubednscm`,
 * one file per key), `stubDomains` and `upstreamNameservers` as JSON, validated as upstream's
 * k8s.io/dns pkg/dns/config does (config.go `Validate`, `ValidateNodeLocalCacheConfig`). An invalid
 * ConfigMap is ignored: the Corefile keeps the last valid one (docs/node-cache.md).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';

export interface KubeDnsConfig {
  stubDomains: Readonly<Record<string, readonly string[]>>;
  upstreamNameservers: readonly string[];
}

export const EMPTY_KUBE_DNS_CONFIG: KubeDnsConfig = { stubDomains: {}, upstreamNameservers: [] };

/** The directory's files (not hidden, not directories) and a version hash over them, as upstream's file sync. */
export function readConfigDir(dir: string): { version: string; data: Record<string, string> } {
  if (!statSync(dir).isDirectory()) throw new Error(`config path "${dir}" is not a directory`);
  const hash = createHash('sha256');
  const data: Record<string, string> = {};
  // Walk order is lexical in Go's filepath.Walk; the hash depends on it.
  for (const name of readdirSync(dir).sort()) {
    if (name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) continue;
    const text = readFileSync(path, 'utf8');
    hash.update(name).update('\0').update(text).update('\0');
    data[name] = text;
  }
  return { version: Object.keys(data).length ? hash.digest('hex') : '', data };
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function isDns1123Subdomain(s: string): boolean {
  return s.length > 0 && s.length <= 253 && s.split('.').every((l) => DNS1123_LABEL.test(l));
}

/** Go's net.SplitHostPort for the forms nameservers take: `ip`, `ip:port`, `[ip6]:port`. */
function splitHostPort(s: string): { host: string; port: string } | null {
  const m = /^\[([^\]]+)\]:(\d*)$/.exec(s) ?? /^([^:[\]]+):(\d*)$/.exec(s);
  return m ? { host: m[1]!, port: m[2]! } : null;
}

function validateStubServer(ns: string): void {
  const hp = splitHostPort(ns);
  const host = hp ? hp.host : ns;
  if (hp && !/^\d+$/.test(hp.port)) throw new Error(`invalid nameserver: "${ns}"`);
  if (hp && Number(hp.port) > 65535) throw new Error(`invalid nameserver: "${ns}"`);
  if (isIP(host) === 0 && !isDns1123Subdomain(ns)) throw new Error(`invalid nameserver: "${ns}"`);
}

function validateUpstream(ns: string): void {
  if (isIP(ns) !== 0) return;
  const hp = splitHostPort(ns);
  if (!hp) throw new Error(`address ${ns}: missing port in address`);
  if (isIP(hp.host) === 0) throw new Error(`bad IP address: "${hp.host}"`);
  const p = Number(hp.port);
  if (!/^\d+$/.test(hp.port) || p < 1 || p > 65535) throw new Error(`bad port number: "${hp.port}"`);
}

function stringList(key: string, v: unknown): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`Invalid JSON for ${key}`);
  return v as string[];
}

/** The ConfigMap's data as configuration; throws with the reason the update is ignored. */
export function parseKubeDnsConfig(data: Readonly<Record<string, string>>): KubeDnsConfig {
  const stubDomains: Record<string, string[]> = {};
  let upstreamNameservers: string[] = [];
  if (data['stubDomains'] !== undefined) {
    const v: unknown = JSON.parse(data['stubDomains']);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('Invalid JSON for stubDomains');
    for (const [domain, servers] of Object.entries(v)) stubDomains[domain] = stringList('stubDomains', servers);
  }
  if (data['upstreamNameservers'] !== undefined)
    upstreamNameservers = stringList('upstreamNameservers', JSON.parse(data['upstreamNameservers']));
  for (const [domain, servers] of Object.entries(stubDomains)) {
    if (!isDns1123Subdomain(domain)) throw new Error(`invalid domain name: "${domain}"`);
    for (const ns of servers) validateStubServer(ns);
  }
  if (upstreamNameservers.length > 3) throw new Error('upstreamNameserver cannot have more than three entries');
  for (const ns of upstreamNameservers) validateUpstream(ns);
  return { stubDomains, upstreamNameservers };
}
