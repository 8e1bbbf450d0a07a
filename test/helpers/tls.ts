/**
 * Throw-away TLS material for the DoT/DoH tests, made with `openssl` in a fresh temporary directory
 * (nothing committed): a CA, server certificates for 127.0.0.1/localhost signed by it, and a client
 * certificate for `client_auth`. P-256 keys, valid for a day. And the clients: one DoT exchange,
 * one HTTP/2 request.
 */
import { execFileSync } from 'node:child_process';
import * as http2 from 'node:http2';
import * as tls from 'node:tls';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPki {
  readonly dir: string;
  readonly caCert: string;
  readonly caKey: string;
  /** Server certificate and key (CN clusterdns-test-1). */
  readonly cert: string;
  readonly key: string;
  /** A second server certificate and key (CN clusterdns-test-2), for reload tests. */
  readonly cert2: string;
  readonly key2: string;
  /** A client certificate and key signed by the CA. */
  readonly clientCert: string;
  readonly clientKey: string;
  /** File contents. */
  read(path: string): Buffer;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    const err = e as { stderr?: Buffer; message: string };
    throw new Error(`openssl ${args[0]} failed (is openssl installed?): ${err.stderr?.toString() ?? err.message}`);
  }
}

/** Make a CA, two server certificates and a client certificate in a new temporary directory. */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-pki-'));
  const key = (name: string): void =>
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', name], dir);
  key('ca.key');
  openssl(
    ['req', '-x509', '-new', '-key', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=clusterdns test CA'],
    dir,
  );
  const sign = (name: string, cn: string, ext: string): void => {
    key(`${name}.key`);
    openssl(['req', '-new', '-key', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`], dir);
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-out',
        `${name}.pem`,
        '-days',
        '1',
        '-extfile',
        `${name}.ext`,
      ],
      dir,
    );
  };
  const serverExt = 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n';
  sign('server', 'clusterdns-test-1', serverExt);
  sign('server2', 'clusterdns-test-2', serverExt);
  sign('client', 'clusterdns-test-client', 'extendedKeyUsage=clientAuth\n');
  return {
    dir,
    caCert: join(dir, 'ca.pem'),
    caKey: join(dir, 'ca.key'),
    cert: join(dir, 'server.pem'),
    key: join(dir, 'server.key'),
    cert2: join(dir, 'server2.pem'),
    key2: join(dir, 'server2.key'),
    clientCert: join(dir, 'client.pem'),
    clientKey: join(dir, 'client.key'),
    read: (p) => readFileSync(p),
  };
}

export interface DotOptions {
  /** CA that must have signed the server's certificate (verification on). */
  readonly ca: Buffer;
  /** Client certificate and key (client_auth). */
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly localAddress?: string;
  readonly timeoutMs?: number;
}

/** One DNS-over-TLS exchange on a new connection: the reply and the server certificate's CN. */
export function dotExchange(port: number, packet: Buffer, o: DotOptions): Promise<{ reply: Buffer; serverCN: string }> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({
      host: '127.0.0.1',
      port,
      ca: o.ca,
      servername: 'localhost',
      ...(o.cert ? { cert: o.cert, key: o.key } : {}),
      ...(o.localAddress ? { localAddress: o.localAddress } : {}),
    });
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => finish(new Error('no DoT reply')), o.timeoutMs ?? 5000);
    const finish = (err: Error | null, reply?: Buffer): void => {
      clearTimeout(timer);
      const cn = String(s.getPeerCertificate()?.subject?.CN ?? '');
      s.destroy();
      if (err) reject(err);
      else resolve({ reply: reply!, serverCN: cn });
    };
    s.on('secureConnect', () => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(packet.length);
      s.write(Buffer.concat([len, packet]));
    });
    s.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0))
        finish(null, buf.subarray(2, 2 + buf.readUInt16BE(0)));
    });
    s.on('error', (e) => finish(e));
    s.on('close', () => finish(new Error('DoT connection closed without a reply')));
  });
}

export interface HttpReply {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

/** One HTTP/2 request over TLS (Node's own http2 client), e.g. a DoH GET or POST. */
export function h2Request(
  port: number,
  ca: Buffer,
  req: { method: string; path: string; headers?: Record<string, string>; body?: Buffer },
  timeoutMs = 5000,
): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`https://localhost:${port}`, { ca, host: '127.0.0.1' });
    const timer = setTimeout(() => {
      session.destroy();
      reject(new Error(`no HTTP/2 response to ${req.method} ${req.path}`));
    }, timeoutMs);
    session.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    const stream = session.request({ ':method': req.method, ':path': req.path, ...req.headers });
    const chunks: Buffer[] = [];
    let status = 0;
    const headers: Record<string, string> = {};
    stream.on('response', (h) => {
      status = Number(h[':status']);
      for (const [k, v] of Object.entries(h)) if (!k.startsWith(':') && v !== undefined) headers[k] = String(v);
    });
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      clearTimeout(timer);
      session.close();
      resolve({ status, headers, body: Buffer.concat(chunks) });
    });
    stream.on('error', (e) => {
      clearTimeout(timer);
      session.destroy();
      reject(e);
    });
    stream.end(req.body);
  });
}
