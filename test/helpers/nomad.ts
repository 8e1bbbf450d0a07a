/**
 * A stand-in Nomad agent on loopback for the nomad plugin's tests: the two endpoints the plugin
 * reads (`/v1/service/NAME?namespace=NS`, `/v1/agent/self`), answering with the JSON shapes of
 * Nomad's HTTP API documentation ("Read Service", "Query Self") — the real agent was not built
 * here (its module is 110 MB with ~340 requirements; plugins/nomad/README.md, "Tests"). It records
 * each request (path, query, token) and can be told to fail or go away.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One registration as `GET /v1/service/:name` lists it (Nomad 1.3+). */
export interface NomadRegistration {
  readonly ServiceName: string;
  readonly Namespace: string;
  readonly Address: string;
  readonly Port: number;
  readonly Tags?: readonly string[];
}

function full(r: NomadRegistration, i: number): Record<string, unknown> {
  return {
    ID: `_nomad-task-0b5e1c1a-${i}-group-${r.ServiceName}-${r.Port}`,
    ServiceName: r.ServiceName,
    Namespace: r.Namespace,
    NodeID: `e4b5c6d7-0000-4000-8000-00000000000${i % 10}`,
    Datacenter: 'dc1',
    JobID: `${r.ServiceName}-job`,
    AllocID: `0b5e1c1a-${i}`,
    Tags: r.Tags ?? [],
    Address: r.Address,
    Port: r.Port,
    CreateIndex: 100 + i,
    ModifyIndex: 100 + i,
  };
}

export interface NomadRequest {
  readonly path: string;
  readonly query: string;
  readonly token: string;
}

export class FakeNomad {
  readonly requests: NomadRequest[] = [];
  /** Registrations by service name. */
  readonly services = new Map<string, NomadRegistration[]>();
  /** Service names that answer 500. */
  readonly failing = new Set<string>();
  /** `/v1/agent/self` answers 500 while set. */
  selfDown = false;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeNomad> {
    let self: FakeNomad | null = null;
    const server = createServer((req, res) => {
      const f = self!;
      const u = new URL(req.url ?? '/', 'http://x');
      f.requests.push({ path: u.pathname, query: u.search, token: String(req.headers['x-nomad-token'] ?? '') });
      res.setHeader('content-type', 'application/json');
      if (u.pathname === '/v1/agent/self') {
        if (f.selfDown) {
          res.statusCode = 500;
          res.end('agent unavailable');
          return;
        }
        res.end(
          JSON.stringify({ config: { Region: 'global', Datacenter: 'dc1' }, member: { Name: 'nomad-1.global' } }),
        );
        return;
      }
      const m = /^\/v1\/service\/([^/]+)$/.exec(u.pathname);
      if (m === null) {
        res.statusCode = 404;
        res.end('Invalid URL path');
        return;
      }
      const name = decodeURIComponent(m[1]!);
      if (f.failing.has(name)) {
        res.statusCode = 500;
        res.end('rpc error: No cluster leader');
        return;
      }
      const ns = u.searchParams.get('namespace') ?? 'default';
      const regs = (f.services.get(name) ?? []).filter((r) => r.Namespace === ns);
      res.end(JSON.stringify(regs.map(full)));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    self = new FakeNomad(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return self;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
