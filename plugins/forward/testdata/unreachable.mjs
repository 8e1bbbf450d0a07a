// Run inside a fresh network namespace (lo only, no route to 2001:db8::/32): one exchange with an
// upstream that cannot be reached, printing the error the forward plugin reports. Needs dist/.
import { Proxy } from '../../../dist/plugins/forward/proxy.js';
import { buildQuery } from '../../../dist/src/dns/encode.js';

const opts = {
  expireMs: 10_000,
  maxAgeMs: 0,
  maxIdleConns: 0,
  sourceAddress: null,
  tls: {},
  tlsServerName: null,
  forceTcp: process.argv[2] === 'tcp',
  healthCheck: { intervalMs: 500, recursionDesired: true, domain: '.' },
  dohMethod: 'POST',
};
const p = new Proxy({ scheme: 'dns', host: '2001:db8::1', port: 53, serverName: null }, opts);
const q = { lname: 'example.org.', qtype: 1, qclass: 1 };
try {
  await p.exchange(buildQuery('example.org.', 1, true), q, process.argv[2] === 'tcp' ? 'tcp' : 'udp', 2000);
  console.log('no error');
} catch (e) {
  console.log(e.message);
}
p.stop();
