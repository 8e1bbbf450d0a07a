/**
 * Metrics of the shadow plugin (plugins/shadow/README.md, Metrics). Everything is counted off the
 * client's path (when a shadow exchange is sent or settled), except `dropped`.
 */
import { CounterCell, flushOnCollect } from '../../src/metrics/batch.js';
import { counter, gauge } from '../../src/metrics/registry.js';
import { outstandingTotal } from './exchange.js';

export const queries = counter({
  name: 'clusterdns_shadow_queries_total',
  help: 'Counter of sampled queries copied to a reference server.',
});

export const compared = counter({
  name: 'clusterdns_shadow_compared_total',
  help: 'Counter of reference replies compared with the reply clusterdns sent.',
});

export const mismatches = counter({
  name: 'clusterdns_shadow_mismatches_total',
  help: 'Counter of differences between the reference reply and ours that no rule tolerates, per kind (a reply can count under several kinds).',
  labelNames: ['kind'] as const,
});

export const differing = counter({
  name: 'clusterdns_shadow_differing_replies_total',
  help: 'Counter of compared replies with at least one difference that no rule tolerates.',
});

export const tolerated = counter({
  name: 'clusterdns_shadow_tolerated_total',
  help: 'Counter of differences tolerated by a rule or by the ignore option, per kind.',
  labelNames: ['kind'] as const,
});

export const referenceErrors = counter({
  name: 'clusterdns_shadow_reference_errors_total',
  help: 'Counter of shadow exchanges without a usable reference reply, per reason (timeout, refused, send, malformed).',
  labelNames: ['reason'] as const,
});

export const unexpected = counter({
  name: 'clusterdns_shadow_unexpected_replies_total',
  help: 'Counter of datagrams from a reference that match no outstanding shadow query (wrong id, too short, late).',
});

export const dropped = counter({
  name: 'clusterdns_shadow_dropped_total',
  help: 'Counter of sampled queries not sent to a reference because max_outstanding exchanges were in flight.',
});

export const outstanding = gauge({
  name: 'clusterdns_shadow_outstanding',
  help: 'Shadow exchanges waiting to be sent or for a reference reply.',
  collect() {
    this.set(outstandingTotal());
  },
});

/** Counted once per sampled query: batched cells (plain increments, pushed when the registry is read). */
export const droppedCell = new CounterCell(dropped, {});
export const queriesCell = new CounterCell(queries, {});
export const comparedCell = new CounterCell(compared, {});
for (const m of [dropped, queries, compared]) flushOnCollect(m);
