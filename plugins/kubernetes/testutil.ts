/** Shared helpers for the kubernetes plugin tests. */
import type { Answer } from 'dns-packet';
import { decode, type Message } from '../../src/dns/message.js';
import type { Query } from '../../src/query.js';
import { toNamespace, toPod, toService, toSlice } from './convert.js';
import type { HandlerConfig } from './handler.js';
import { Store } from './store.js';
import { fixture } from './testdata.js';

/** A Store filled with the §2.1 fixture through the converters. */
export function fixtureStore(): Store {
  const store = new Store();
  const f = fixture();
  store.now = () => 1_700_000_000_000;
  for (const o of f.namespaces) {
    const r = toNamespace(o);
    if (typeof r !== 'string') store.upsert('namespaces', r);
  }
  for (const o of f.services) {
    const r = toService(o);
    if (typeof r === 'string') throw new Error(r);
    store.upsert('services', r);
  }
  for (const o of f.slices) {
    const r = toSlice(o);
    if (typeof r === 'string' || r === null) throw new Error(String(r));
    store.upsert('endpointslices', r);
  }
  for (const o of f.pods) {
    const r = toPod(o);
    if (typeof r === 'string' || r === null) throw new Error(String(r));
    store.upsert('pods', r);
  }
  return store;
}

export function baseConfig(over: Partial<HandlerConfig> = {}): HandlerConfig {
  return {
    zones: ['cluster.local.', 'in-addr.arpa.', 'ip6.arpa.'],
    primaryZone: 'cluster.local.',
    ttl: 5,
    podMode: 'insecure',
    endpointPodNames: false,
    namespaces: null,
    ignoreEmptyService: false,
    localIPs: ['10.244.0.5'],
    fallthrough: null,
    searchDomains: [],
    ...over,
  };
}

export function replyOf(q: Query): Message | null {
  if (!q.reply) return null;
  return decode(q.reply.wire());
}

export function soaSerial(m: Message): number | undefined {
  const soa = [...m.answers, ...m.authorities].find((r) => r.type === 'SOA') as
    | (Answer & { data: { serial: number } })
    | undefined;
  return soa?.data.serial;
}
