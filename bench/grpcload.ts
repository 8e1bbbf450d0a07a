/**
 * Load generator for DNS over gRPC (bench/grpc.ts): CONNECTIONS HTTP/2 connections to
 * 127.0.0.1:PORT, each keeping OUTSTANDING `coredns.dns.DnsService/Query` calls in flight for
 * DURATION seconds (after a warm-up second not counted), then one JSON line: answers, errors.
 *
 *   node dist/bench/grpcload.js PORT DURATION CONNECTIONS OUTSTANDING
 */
import * as http2 from 'node:http2';
import { frameDnsPacket, QUERY_PATH } from '../src/grpc/wire.js';
import { encodeSimpleQuery } from './lib.js';

const [port, duration, connections, outstanding] = process.argv.slice(2).map(Number) as [
  number,
  number,
  number,
  number,
];
const body = frameDnsPacket(encodeSimpleQuery('example.org.', 1, 4242));
const HEADERS = { ':method': 'POST', ':path': QUERY_PATH, 'content-type': 'application/grpc', te: 'trailers' };

let counting = false;
let stopping = false;
let answers = 0;
let errors = 0;

function call(s: http2.ClientHttp2Session): void {
  if (stopping || s.destroyed) return;
  const req = s.request(HEADERS);
  let ok = false;
  req.on('trailers', (t) => {
    ok = t['grpc-status'] === '0';
  });
  req.on('data', () => undefined);
  req.on('error', () => undefined);
  req.on('close', () => {
    if (counting) {
      if (ok) answers++;
      else errors++;
    }
    call(s);
  });
  req.end(body);
}

const sessions: http2.ClientHttp2Session[] = [];
for (let i = 0; i < connections; i++) {
  const s = http2.connect(`http://127.0.0.1:${port}`);
  s.on('error', () => undefined);
  sessions.push(s);
  for (let k = 0; k < outstanding; k++) call(s);
}
setTimeout(() => {
  counting = true;
  setTimeout(() => {
    counting = false;
    stopping = true;
    process.stdout.write(`${JSON.stringify({ answers, errors, seconds: duration })}\n`);
    for (const s of sessions) s.destroy();
    process.exit(0);
  }, duration * 1000);
}, 1000);
