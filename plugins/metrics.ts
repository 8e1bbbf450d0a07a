/**
 * The metric families of every plugin, registered when the registry is loaded, whichever plugins
 * the Corefile names: CoreDNS's plugins register theirs when the binary starts, so its `/metrics`
 * lists them all (docs/plugins.md, Metric catalogue), while clusterdns loads a plugin's code
 * only when a Corefile names it (plugins/index.ts). A plugin's `metrics.ts` holds its families
 * and imports nothing but `src/metrics/`; the order below is the order in which the registry
 * imported them before plugins were loaded lazily, which is the order a scrape lists them in.
 * The shadow plugin's families are registered when a `shadow` directive is set up (its README).
 */
import './reload/metrics.js';
import './health/metrics.js';
import './autopath/metrics.js';
import './cache/metrics.js';
import './template/metrics.js';
import './hosts/metrics.js';
import './kubernetes/metrics.js';
import './forward/metrics.js';
import './grpc/metrics.js';
import './local/metrics.js';
import './dns64/metrics.js';
import './acl/metrics.js';
import './nomad/metrics.js';
import './dnssec/metrics.js';
import './siit/metrics.js';
