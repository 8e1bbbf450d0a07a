/** Metrics of the local plugin (docs/plugins.md, local). */
import { counter } from '../../src/metrics/registry.js';

export const localhostRequests = counter({
  name: 'coredns_local_localhost_requests_total',
  help: 'Counter of special localhost subdomain requests.',
});
