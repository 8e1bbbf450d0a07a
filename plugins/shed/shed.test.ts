/**
 * shed: CoreDNS 1.15.0's setup errors, and behaviour under a saturating UDP load on real sockets —
 * queries beyond the stack are dropped and counted, the ones admitted are answered, TCP is not
 * touched, and the server serves normally once the flood is over. (Latency under overload is a
 * bench target: `npm run bench -- --shed`, bench/README.md.)
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { shedDropped } from '../../src/server/shed.js';
import { encodeQuery, tcpQuery, udpExchange } from '../../test/helpers/dns.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';
import { shed } from './index.js';

async function dropped(server: string, reason: string): Promise<number> {
  const m = await shedDropped().get();
  return m.values.find((v) => v.labels.server === server && v.labels.reason === reason)?.value ?? -1;
}

describe('shed: setup', () => {
  const err = (text: string) =>
    configError(() => shed.setup(dispenserFor(text, 'shed'), setupContext()), text).describe();
  it('words errors as CoreDNS 1.15.0', () => {
    expect(err('shed x')).toBe(
      "plugin/shed: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'x'",
    );
    expect(err('shed {\n a\n}')).toBe('plugin/shed: Corefile:2 - Error during parsing: shed takes no options');
  });

  it('refuses a second shed in a block', async () => {
    await expect(startServer('. {\n  shed\n  shed\n  whoami\n}\n')).rejects.toThrow(
      'this plugin can only be used once per Server Block',
    );
  });
});

/** The flood: bursts until stdin closes, then a JSON report (replies to its own ids, non-responses). */
const FLOOD = `
const dgram = require('node:dgram');
const [port, hex] = process.argv.slice(1);
const q = Buffer.from(hex, 'hex');
let sent = 0, answered = 0, bad = 0, stop = false;
const socks = [0, 1, 2, 3].map(() => {
  const s = dgram.createSocket({ type: 'udp4', recvBufferSize: 8 << 20 });
  s.on('message', (m) => ((m[2] & 0x80) === 0 ? bad++ : answered++));
  s.bind(0, '127.0.0.1');
  return s;
});
function burst() {
  if (stop) return;
  for (const s of socks) for (let i = 0; i < 256; i++) { q.writeUInt16BE(sent++ & 0xffff, 0); s.send(Buffer.from(q), +port, '127.0.0.1'); }
  setImmediate(burst);
}
process.stdin.on('data', () => {});
process.stdin.on('end', () => { stop = true; setTimeout(() => { process.stdout.write(JSON.stringify({ sent, answered, bad })); process.exit(0); }, 300); });
setTimeout(burst, 50);
`;

describe('shed: a saturating UDP flood', () => {
  let srv: TestServer;
  let name: string;
  beforeAll(async () => {
    srv = await startServer('. {\n  shed\n  whoami\n}\n');
    name = [...srv.server.listeners.keys()][0]!;
  });
  afterAll(() => srv.stop());

  it('exports both series from the start', async () => {
    expect(await dropped(name, 'query')).toBe(0);
    expect(await dropped(name, 'response')).toBe(0);
  });

  it('drops and counts what the stack cannot hold, answers what it admits, then serves normally', async () => {
    const before = await dropped(name, 'query');
    // A load generator of its own (another process, so it does not share the server's event
    // loop): bursts of datagrams from 4 sockets until the server counts drops, replies checked.
    const child = spawn(
      process.execPath,
      ['-e', FLOOD, String(srv.port), encodeQuery('flood.example', 'A').toString('hex')],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    try {
      await waitFor('shed drops counted', async () => (await dropped(name, 'query')) > before);
    } finally {
      child.stdin.end();
      await exited;
    }
    const report = JSON.parse(out) as { sent: number; answered: number; bad: number };
    expect(report.answered).toBeGreaterThan(0);
    expect(report.bad).toBe(0);
    await waitFor('nothing waiting', () => srv.server.listeners.get(name)!.busy === 0);
    // Over: a plain query gets its answer on UDP and TCP.
    expect(decode(await udpExchange(srv.port, encodeQuery('after.example', 'A'))).type).toBe('response');
    expect((await tcpQuery(srv.port, 'after.example', 'A')).type).toBe('response');
  });
});

describe('shed: the kernel queue', () => {
  it('shrinks the UDP receive buffers, so that overload is dropped by the kernel, not queued', async () => {
    const shedding = await startServer('. {\n  shed\n  whoami\n}\n');
    const plain = await startServer('. {\n  whoami\n}\n');
    try {
      const sizes = (t: TestServer): number[] => [...t.server.listeners.values()].flatMap((l) => l.udpRecvBufferSizes);
      const shedSizes = sizes(shedding);
      expect(shedSizes.length).toBeGreaterThan(0);
      // Linux doubles what is asked for its bookkeeping: 64 KiB asked, 128 KiB reported.
      for (const n of shedSizes) expect(n).toBeLessThanOrEqual(128 * 1024);
      for (const n of sizes(plain)) expect(n).toBeGreaterThan(128 * 1024);
    } finally {
      await shedding.stop();
      await plain.stop();
    }
  });
});
