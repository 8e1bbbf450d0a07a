/**
 * A DoH load generator for the encrypted-transport bench (bench/run.ts, `--only encrypted`):
 * dnsperf 2.x's DoH mode loses nearly every reply here, against CoreDNS 1.15.0 as well
 * (`_http2_frame_recv_cb: frame received when already having a dns msg`). Node's own HTTP/2
 * client, run as a process of its own on the load generator's core: SESSIONS connections, each
 * with OUTSTANDING POSTs of one query in flight, for SECONDS; prints `completed N lost M`.
 *
 * Usage: node dist/bench/dohload.js PORT SECONDS SESSIONS OUTSTANDING
 */
import * as http2 from 'node:http2';
import { encodeSimpleQuery } from './lib.js';

const [port, seconds, sessions, outstanding] = process.argv.slice(2).map(Number) as [number, number, number, number];
const query = encodeSimpleQuery('example.org', 1, 0);
let completed = 0;
let lost = 0;
let running = true;

function loop(s: http2.ClientHttp2Session): void {
  if (!running || s.destroyed) return;
  const req = s.request({ ':method': 'POST', ':path': '/dns-query', 'content-type': 'application/dns-message' });
  let status = 0;
  req.on('response', (h) => {
    status = Number(h[':status']);
  });
  req.on('data', () => undefined);
  // 'close', not 'end': the next request starts once the stream is gone from both sides.
  req.on('close', () => {
    if (status === 200) completed++;
    else lost++;
    loop(s);
  });
  req.on('error', () => undefined);
  req.end(query);
}

const all: http2.ClientHttp2Session[] = [];
for (let i = 0; i < sessions; i++) {
  const s = http2.connect(`https://127.0.0.1:${port}`, { rejectUnauthorized: false });
  s.on('error', () => undefined);
  s.on('connect', () => {
    for (let k = 0; k < outstanding; k++) loop(s);
  });
  all.push(s);
}
setTimeout(() => {
  running = false;
  process.stdout.write(`completed ${completed} lost ${lost}\n`);
  for (const s of all) s.destroy();
  process.exit(0);
}, seconds * 1000);
