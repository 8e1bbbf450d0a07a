/**
 * Metrics of the shadow plugin (plugins/shadow/README.md, Metrics). Everything is counted off the
 * client's path (when a shadow exchange is sent or settled), except `dropped`. Registered when a
 * `shadow` directive is first set up, so a server without one exports none of these families.
 */
import { CounterCell, flushOnCollect } from '../../src/metrics/batch.js';
import { counter, gauge } from '../../src/metrics/registry.js';
import { outstandingTotal } from './exchange.js';

function create() {
  const queries = counter({
    name: 'clusterdns_shadow_queries_total',
    help: 'Counter of sampled queries copied to a reference server.',
  });

  const compared = counter({
    name: 'clusterdns_shadow_compared_total',
    help: 'Counter of reference replies compared with the reply clusterdns sent.',
  });

  const mismatches = counter({
    name: 'clusterdns_shadow_mismatches_total',
    help: 'Counter of differences between the reference reply and ours that no rule tolerates, per kind (a reply can count under several kinds).',
    labelNames: ['kind'] as const,
  });

  const differing = counter({
    name: 'clusterdns_shadow_differing_replies_total',
    help: 'Counter of compared replies with at least one difference that no rule tolerates.',
  });

  const tolerated = counter({
    name: 'clusterdns_shadow_tolerated_total',
    help: 'Counter of differences tolerated by a rule or by the ignore option, per kind.',
    labelNames: ['kind'] as const,
  });

  const referenceErrors = counter({
    name: 'clusterdns_shadow_reference_errors_total',
    help: 'Counter of shadow exchanges without a usable reference reply, per reason (timeout, refused, send, malformed, aborted).',
    labelNames: ['reason'] as const,
  });

  const unexpected = counter({
    name: 'clusterdns_shadow_unexpected_replies_total',
    help: 'Counter of datagrams from a reference that match no outstanding shadow query (wrong id, too short, late).',
  });

  const dropped = counter({
    name: 'clusterdns_shadow_dropped_total',
    help: 'Counter of sampled queries not sent to a reference because max_outstanding exchanges were in flight.',
  });

  const outstanding = gauge({
    name: 'clusterdns_shadow_outstanding',
    help: 'Shadow exchanges waiting to be sent or for a reference reply.',
    collect() {
      this.set(outstandingTotal());
    },
  });

  // Counted once per sampled query: batched cells (plain increments, pushed when the registry is read).
  const droppedCell = new CounterCell(dropped, {});
  const queriesCell = new CounterCell(queries, {});
  const comparedCell = new CounterCell(compared, {});
  for (const m of [dropped, queries, compared]) flushOnCollect(m);
  return {
    queries,
    compared,
    mismatches,
    differing,
    tolerated,
    referenceErrors,
    unexpected,
    dropped,
    outstanding,
    droppedCell,
    queriesCell,
    comparedCell,
  };
}

export type ShadowMetrics = ReturnType<typeof create>;

let created: ShadowMetrics | null = null;

/** The plugin's metrics, registered on first use (idempotent across reloads). */
export function shadowMetrics(): ShadowMetrics {
  created ??= create();
  return created;
}
