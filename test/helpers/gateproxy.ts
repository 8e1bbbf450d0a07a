/**
 * An HTTP proxy on loopback in front of a cloud API stand-in (moto, FakeCloudDNS, FakeAzure) that
 * counts the requests a predicate picks (the zone listings) and, while its gate is closed, holds
 * them unanswered until `release()`. A server's refresh loop waits for its listing before it
 * schedules the next one, so holding a listing stops the loop at a known point: the tests count
 * listings per refresh without depending on how many refresh intervals have passed.
 */
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export class GateProxy {
  /** Every picked request (method and path with query), in order of arrival. */
  readonly picked: string[] = [];
  private closed = false;
  private held: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  /** A proxy to `upstream` (`http://host:port`); `pick` says which requests it counts and holds. */
  static async start(upstream: string, pick: (method: string, path: string) => boolean): Promise<GateProxy> {
    const target = new URL(upstream);
    let self: GateProxy | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const forward = (): void => GateProxy.forward(target, req, Buffer.concat(chunks), res);
        const p = self!;
        if (!pick(req.method ?? '', req.url ?? '/')) return forward();
        p.picked.push(`${req.method} ${req.url}`);
        if (p.closed) p.held.push(forward);
        else forward();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    self = new GateProxy(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return self;
  }

  private static forward(target: URL, req: IncomingMessage, body: Buffer, res: ServerResponse): void {
    const out = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    out.on('error', (e) => res.writeHead(502).end(String(e)));
    out.end(body);
  }

  /** Picked requests that arrive from now on are held. */
  close(): void {
    this.closed = true;
  }

  /** Picked requests held now. */
  get holding(): number {
    return this.held.length;
  }

  /** Forward the held requests (the gate stays as it is). */
  release(): void {
    const h = this.held;
    this.held = [];
    for (const f of h) f();
  }

  /** Open the gate, forward what it held, and stop listening. */
  async stop(): Promise<void> {
    this.closed = false;
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
