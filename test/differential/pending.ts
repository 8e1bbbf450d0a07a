/**
 * Known differences from CoreDNS 1.15.0 in areas another piece of work owns. A mismatch whose
 * every difference matches an entry here is reported but does not fail the suite; an entry that
 * matches nothing in its case fails it (the fix landed: delete the entry). Each entry names its
 * owner and the reason. Intentional differences do not belong here: they are tolerance rules in
 * src/dnscompare/rules.ts.
 */
import type { DiffKind } from '../../src/dnscompare/index.js';

export interface PendingEntry {
  readonly id: string;
  /** Case id (or pattern) the entry applies to. */
  readonly case: string | RegExp;
  /** Which difference kinds it covers (every difference of the reply must be covered). */
  readonly kinds: readonly DiffKind[];
  /** Lower-cased question name pattern. */
  readonly qname?: RegExp;
  readonly qtypes?: readonly string[];
  readonly proto?: 'udp' | 'tcp';
  /** Whether the query carried EDNS. */
  readonly edns?: boolean;
  /** Pattern on each difference's detail line. */
  readonly detail?: RegExp;
  /** Helper / area that owns the fix. */
  readonly owner: string;
  readonly reason: string;
  /** Does not fail when it matches nothing (for behaviour that shows only sometimes). */
  readonly optional?: boolean;
}

export const PENDING: readonly PendingEntry[] = [];
