/** A query as the expression functions see it (CoreDNS's plugin/pkg/expression over request.Request). */
import { qclassName, qtypeName } from '../dns/constants.js';
import type { Query } from '../query.js';
import type { ExprQuery } from './values.js';

const NO_GROUPS = (): string => '';

/** The expression environment for `q`; `group` answers template's `group()` (none for view). */
export function exprQuery(q: Query, group: (key: string) => string = NO_GROUPS): ExprQuery {
  return {
    name: () => q.lname,
    type: () => qtypeName(q.qtype),
    class: () => qclassName(q.qclass),
    proto: () => q.proto,
    size: () => q.raw.length,
    clientIP: () => q.transport.remoteAddress,
    port: () => String(q.transport.remotePort),
    id: () => q.id,
    opcode: () => ((q.request.flags ?? 0) >> 11) & 0xf,
    do: () => q.do,
    bufsize: () => q.bufsize,
    serverIP: () => q.transport.localAddress,
    serverPort: () => String(q.transport.localPort),
    metadata: (label) => q.metaValue(label),
    group,
  };
}
