/**
 * The pprof HTTP side server: CoreDNS's `/debug/pprof/` paths, with Node's profiles behind them
 * (README.md): a CPU profile from the inspector (`.cpuprofile` JSON, for Chrome DevTools or
 * speedscope) and a V8 heap snapshot (`.heapsnapshot` JSON). One socket per address, kept across
 * reloads (`ctx.shared`), so a reload never fails on its own port.
 */
import type * as http from 'node:http';
import type * as net from 'node:net';
import { getHeapSnapshot } from 'node:v8';
import { collectGarbage } from '../../src/util/gc.js';
import { nodeHttp } from '../../src/util/require.js';

const PATH = '/debug/pprof';
/** CoreDNS's pprof server: 5 s read, write and idle timeouts; a profile must end before the write timeout. */
const TIMEOUT_MS = 5000;

/** Go's net/http/pprof serveError. */
function serveError(res: http.ServerResponse, status: number, text: string): void {
  const body = `${text}\n`;
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Go-Pprof': '1',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const PROFILES: readonly { name: string; href: string; what: string }[] = [
  {
    name: 'cmdline',
    href: 'cmdline',
    what: 'The command line invocation of the current program (arguments separated by NUL bytes).',
  },
  {
    name: 'heap',
    href: 'heap',
    what: 'A V8 heap snapshot of the live objects (.heapsnapshot JSON; open it in Chrome DevTools, Memory tab). Add gc=1 to collect garbage first.',
  },
  {
    name: 'profile',
    href: 'profile',
    what: "CPU profile (.cpuprofile JSON from the V8 inspector; open it in Chrome DevTools or speedscope). Set the seconds GET parameter to 1-4 (the server's 5 s write timeout, as CoreDNS).",
  },
];

function indexPage(): string {
  const rows = PROFILES.map((p) => `<tr><td></td><td><a href='${p.href}'>${p.name}</a></td></tr>`).join('\n');
  const desc = PROFILES.map((p) => `<li><div class=profile-name>${p.name}: </div> ${escapeHtml(p.what)}</li>`).join(
    '\n',
  );
  return `<html>
<head>
<title>${PATH}/</title>
<style>
.profile-name{
	display:inline-block;
	width:6rem;
}
</style>
</head>
<body>
${PATH}/
<br>
<p>clusterdns runs on Node.js: the profiles below are V8's formats, not Go's pprof protobuf.</p>
<br>
Types of profiles available:
<table>
<thead><td>Count</td><td>Profile</td></thead>
${rows}
</table>
<br>
<p>
Profile Descriptions:
<ul>
${desc}
</ul>
</p>
</body>
</html>
`;
}

export class PprofServer {
  private readonly http: http.Server;
  private readonly sockets = new Set<net.Socket>();
  private listening: Promise<void> | null = null;
  private profiling = false;

  /** `queryThread` (ProcessInfo.queryThread): `listen` does nothing, the main thread's server answers. */
  constructor(
    readonly host: string,
    readonly port: number,
    private readonly queryThread = false,
  ) {
    this.http = nodeHttp.createServer((req, res) => void this.serve(req, res));
    this.http.requestTimeout = TIMEOUT_MS;
    this.http.keepAliveTimeout = TIMEOUT_MS;
    this.http.on('connection', (s: net.Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  /** Listen (idempotent); rejects with the bind error. */
  listen(): Promise<void> {
    // Query threads serve DNS only: the main thread's listener answers (docs/multicore.md §5), and
    // its profiles are of the main thread.
    if (this.queryThread) return Promise.resolve();
    this.listening ??= new Promise<void>((resolve, reject) => {
      const onError = (e: Error): void => {
        this.listening = null;
        reject(e);
      };
      this.http.once('error', onError);
      this.http.listen({ host: this.host === '' ? undefined : this.host, port: this.port }, () => {
        this.http.off('error', onError);
        resolve();
      });
    });
    return this.listening;
  }

  /** The bound port (tests listen on port 0). */
  get boundPort(): number {
    const a = this.http.address();
    return typeof a === 'object' && a ? a.port : this.port;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.http.close(() => r()));
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://pprof');
    const p = url.pathname;
    if (p === PATH) {
      res.writeHead(302, { Location: `${PATH}/`, 'Content-Type': 'text/html; charset=utf-8' });
      res.end(`<a href="${PATH}/">Found</a>.\n\n`);
      return;
    }
    if (!p.startsWith(`${PATH}/`)) {
      serveError(res, 404, '404 page not found');
      return;
    }
    const name = p.slice(PATH.length + 1);
    try {
      switch (name) {
        case '':
          res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
          res.end(indexPage());
          return;
        case 'cmdline': {
          const body = process.argv.join('\x00');
          res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
          res.end(body);
          return;
        }
        case 'profile':
          return await this.cpuProfile(url, res);
        case 'heap':
          return this.heapSnapshot(url, res);
        default:
          // Go's goroutine, allocs, block, mutex, threadcreate, trace and symbol have no Node equivalent.
          serveError(res, 404, 'Unknown profile');
      }
    } catch (e) {
      if (!res.headersSent) serveError(res, 500, `Could not write profile: ${(e as Error).message}`);
      else res.destroy();
    }
  }

  private async cpuProfile(url: URL, res: http.ServerResponse): Promise<void> {
    const raw = url.searchParams.get('seconds') ?? '';
    let sec = /^[+-]?\d+$/.test(raw) ? Number(raw) : 0;
    if (!(sec > 0)) sec = 30;
    if (sec * 1000 >= TIMEOUT_MS) {
      serveError(res, 400, "profile duration exceeds server's WriteTimeout");
      return;
    }
    if (this.profiling) {
      serveError(res, 500, 'Could not enable CPU profiling: cpu profiling already in use');
      return;
    }
    this.profiling = true;
    // Loaded on the first profile, not with the plugin registry: on Node 24 `node:inspector`
    // pulls in Node's bundled undici (fetch), several MiB of heap in every process and query
    // thread whether or not pprof is configured (docs/multicore.md §8).
    const { Session } = await import('node:inspector/promises');
    const session = new Session();
    try {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
      await new Promise<void>((r) => {
        const t = setTimeout(r, sec * 1000);
        res.once('close', () => {
          clearTimeout(t);
          r();
        });
      });
      const { profile } = await session.post('Profiler.stop');
      if (res.destroyed) return;
      const body = JSON.stringify(profile);
      res.writeHead(200, {
        'Content-Type': 'application/octet-stream',
        'Content-Disposition': 'attachment; filename="profile.cpuprofile"',
        'X-Content-Type-Options': 'nosniff',
        'Content-Length': Buffer.byteLength(body),
      });
      res.end(body);
    } finally {
      session.disconnect();
      this.profiling = false;
    }
  }

  private heapSnapshot(url: URL, res: http.ServerResponse): void {
    if (url.searchParams.get('gc') === '1') collectGarbage();
    const snap = getHeapSnapshot();
    res.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Content-Disposition': 'attachment; filename="heap.heapsnapshot"',
      'X-Content-Type-Options': 'nosniff',
    });
    snap.on('error', () => res.destroy());
    snap.pipe(res);
  }
}
