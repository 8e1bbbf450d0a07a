/**
 * The `etcd` directive (README.md): SkyDNS records from etcd under `/skydns`, the layout
 * external-dns's CoreDNS provider writes. Unlike CoreDNS, which reads etcd on every lookup, the
 * index lists the path once and follows it with a watch (kvsource.ts); one index per process and
 * per (endpoints, path, credentials, TLS), kept across reloads and shared by the query threads.
 */
import { LOOKUP_REFUSED, type Handler, type PluginDef } from '../../src/plugin.js';
import { EtcdHandler } from './handler.js';
import { etcdIndex, type IndexSettings } from './kvindex.js';
import { Backend } from './lookup.js';
import { namePath } from './service.js';
import { ETCD_OPTIONS, parseEtcd } from './setup.js';

/** CoreDNS's etcdTimeout: the bound on one request to etcd. */
const ETCD_TIMEOUT_MS = 5000;

export const etcd: PluginDef = {
  name: 'etcd',
  repeat: 'first',
  options: ETCD_OPTIONS,
  setup(d, ctx) {
    const cfg = parseEtcd(d, ctx.block.zones, ctx.resolvePath);
    // The root every name's path starts with (msg.Path of the root name), and the watched prefix.
    const root = namePath('.', cfg.pathPrefix);
    const settings: IndexSettings = {
      prefix: root === '/' ? '/' : `${root}/`,
      client: {
        endpoints: cfg.endpoints,
        tls: cfg.tls,
        credentials: cfg.credentials,
        timeoutMs: ETCD_TIMEOUT_MS,
      },
    };
    const key = `etcd:${JSON.stringify({ prefix: settings.prefix, endpoints: cfg.endpoints, credentials: cfg.credentials, tls: cfg.tls ? cfg.tlsFiles : null })}`;
    const index = ctx.shared(
      key,
      () => etcdIndex(settings, ctx.log, ctx.processState.replication, key),
      (ix) => ix.stop(),
    );
    ctx.onStartup(async () => {
      // A query thread waits for the main thread's table; the main thread does not wait for etcd.
      if (index.replica) await index.start();
      else void index.start();
    });
    const selfLookup = ctx.selfLookup;
    const backend = new Backend(
      {
        pathPrefix: cfg.pathPrefix,
        noApexFallback: cfg.noApexFallback,
        minLeaseTtl: cfg.minLeaseTtl,
        maxLeaseTtl: cfg.maxLeaseTtl,
      },
      index.view,
      async (q, name, qtype) => {
        const r = await selfLookup.lookup(q.derive(name, qtype));
        return r === LOOKUP_REFUSED ? null : r;
      },
    );
    return (next: Handler | null): Handler =>
      new EtcdHandler({ zones: cfg.zones, fallthrough: cfg.fallthrough }, index.view, backend, next);
  },
};
