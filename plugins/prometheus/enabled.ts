/**
 * `coredns_plugin_enabled{server,zone,view,name}` = 1 for every (listener, zone key, handler plugin)
 * of the blocks that have `prometheus`. Each block adds its series once its instance serves and
 * removes them when the instance is shut down; series are reference-counted so that a reload that
 * keeps a series never drops it, whatever the order of the new instance's serving hooks and the
 * old instance's shutdown hooks. A failed reload never reaches its serving hooks, so it changes
 * nothing.
 */
import { pluginEnabled } from '../../src/metrics/dns.js';
import type { BlockInfo } from '../../src/plugin.js';

type Series = readonly [server: string, zone: string, name: string];

function seriesOf(block: BlockInfo): Series[] {
  const out: Series[] = [];
  for (const server of block.servers)
    for (const zone of block.zones) for (const name of block.handlerPlugins) out.push([server, zone, name]);
  return out;
}

/** The published series with their reference counts: one per process, `ctx.shared('prometheus:enabled')`. */
export class EnabledSeries {
  private readonly refs = new Map<string, { series: Series; count: number }>();

  /** Publish a block's series; returns the function that withdraws them (idempotent). */
  publish(block: BlockInfo): () => void {
    const refs = this.refs;
    const mine = seriesOf(block);
    for (const s of mine) {
      const key = s.join('\u0000');
      const e = refs.get(key);
      if (e) e.count++;
      else refs.set(key, { series: s, count: 1 });
      pluginEnabled.labels(s[0], s[1], '', s[2]).set(1);
    }
    let withdrawn = false;
    return () => {
      if (withdrawn) return;
      withdrawn = true;
      for (const s of mine) {
        const key = s.join('\u0000');
        const e = refs.get(key);
        if (!e) continue;
        if (--e.count === 0) {
          refs.delete(key);
          pluginEnabled.remove(s[0], s[1], '', s[2]);
        }
      }
    };
  }
}
