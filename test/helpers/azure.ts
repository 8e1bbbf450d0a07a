/**
 * A stand-in for Azure DNS on loopback, for the azure plugin's tests: Azure AD's v1 token endpoint
 * (client-credentials grant) and the Resource Manager list calls the plugin makes for public
 * (`dnsZones/ZONE/recordsets`, 2018-05-01) and private zones (`privateDnsZones/ZONE/ALL`,
 * 2018-09-01), with `nextLink` paging and ARM's error JSON — the shapes of the REST reference and of
 * CoreDNS's own azure tests (plugin/azure/sync_test.go). No Azure emulator for DNS exists.
 *
 * CoreDNS 1.15.0's azure always calls https://management.azure.com (its SDK client ignores the
 * environment's endpoint), so the stand-in is also an HTTPS proxy for it: `CONNECT
 * management.azure.com:443` is answered with a certificate for that name signed by a throw-away CA
 * (`caFile`, given to CoreDNS as SSL_CERT_FILE, with HTTPS_PROXY pointing here). clusterdns reaches
 * the same handler directly through an AZURESTACKCLOUD environment file (`environmentFile`).
 *
 * It also issues managed identity tokens as the documented endpoints do: the instance metadata
 * service's `GET /metadata/identity/oauth2/token` (`Metadata: true`; CoreDNS reaches it at
 * 169.254.169.254 through HTTP_PROXY pointing here, clusterdns through
 * AZURE_POD_IDENTITY_AUTHORITY_HOST) and App Service's `GET /msi/token` (api-version 2017-09-01,
 * the `secret` header, for MSI_ENDPOINT/MSI_SECRET). `miRequests` records them.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TLSSocket } from 'node:tls';

export const TENANT = 'tenant-1';
export const CLIENT = 'client-1';
export const SECRET = 'secret-1';
export const SUBSCRIPTION = 'sub-1';
/** App Service's MSI_SECRET the stand-in expects. */
export const MSI_SECRET = 'msi-secret-1';

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA and a certificate for management.azure.com signed by it, in a new temporary directory. */
function makeCertificates(dir: string): { ca: string; cert: Buffer; key: Buffer } {
  const ec = ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'];
  openssl(['genpkey', ...ec, '-out', 'ca.key'], dir);
  openssl(
    ['req', '-x509', '-new', '-key', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=azure test CA'],
    dir,
  );
  openssl(['genpkey', ...ec, '-out', 'arm.key'], dir);
  openssl(['req', '-new', '-key', 'arm.key', '-out', 'arm.csr', '-subj', '/CN=management.azure.com'], dir);
  writeFileSync(join(dir, 'arm.ext'), 'subjectAltName=DNS:management.azure.com\nextendedKeyUsage=serverAuth\n');
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'arm.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'arm.pem',
      '-days',
      '1',
      '-extfile',
      'arm.ext',
    ],
    dir,
  );
  return { ca: join(dir, 'ca.pem'), cert: readFileSync(join(dir, 'arm.pem')), key: readFileSync(join(dir, 'arm.key')) };
}

export class FakeAzure {
  /** `rg/zone` of public zones → record sets as ARM lists them (`{name, properties}`). */
  readonly publicZones = new Map<string, unknown[]>();
  readonly privateZones = new Map<string, unknown[]>();
  readonly requests: { host: string; path: string; auth: string }[] = [];
  /** Record sets per page. */
  pageSize = 4;
  failing = false;
  tokens = 0;
  /** Managed identity token requests: path and query, and the Metadata / secret headers. */
  readonly miRequests: { path: string; metadata: string; secret: string }[] = [];
  readonly caFile: string;
  readonly environmentFile: string;
  private readonly tlsOptions: { cert: Buffer; key: Buffer };

  private constructor(
    private readonly server: Server,
    readonly url: string,
    dir: string,
  ) {
    const c = makeCertificates(dir);
    this.caFile = c.ca;
    this.tlsOptions = { cert: c.cert, key: c.key };
    this.environmentFile = join(dir, 'azurestack.json');
    writeFileSync(
      this.environmentFile,
      JSON.stringify({
        name: 'AzureStackCloud',
        resourceManagerEndpoint: `${url}/`,
        activeDirectoryEndpoint: `${url}/`,
        managementPortalURL: `${url}/`,
        serviceManagementEndpoint: `${url}/`,
        tokenAudience: `${url}/`,
      }),
    );
  }

  static async start(): Promise<FakeAzure> {
    let self: FakeAzure | null = null;
    const server = createServer((req, res) => self!.handle(req, res));
    server.on('connect', (req: IncomingMessage, socket: Socket) => {
      // The HTTPS proxy for CoreDNS: only management.azure.com, answered here.
      if (req.url !== 'management.azure.com:443') {
        socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
        return;
      }
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      const tls = new TLSSocket(socket, { isServer: true, ...self!.tlsOptions });
      server.emit('connection', tls);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const dir = mkdtempSync(join(tmpdir(), 'fake-azure-'));
    self = new FakeAzure(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, dir);
    return self;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://x');
      const auth = String(req.headers.authorization ?? '');
      this.requests.push({ host: String(req.headers.host ?? ''), path: `${u.pathname}${u.search}`, auth });
      const json = (status: number, body: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
      };
      if (u.pathname.startsWith('/metadata/identity') || u.pathname === '/msi/token') {
        const metadata = String(req.headers.metadata ?? '');
        const secret = String(req.headers.secret ?? '');
        this.miRequests.push({ path: `${u.pathname}${u.search}`, metadata, secret });
        const imds = u.pathname === '/metadata/identity/oauth2/token';
        const ok = imds
          ? metadata === 'true' && u.searchParams.get('api-version') === '2018-02-01'
          : secret === MSI_SECRET && u.searchParams.get('api-version') === '2017-09-01';
        if (req.method !== 'GET' || !ok || !u.searchParams.get('resource')) {
          // As IMDS answers adal's MSIAvailable probe, which has no resource.
          json(400, { error: 'invalid_request', error_description: 'Required audience parameter not specified' });
          return;
        }
        this.tokens++;
        const now = Math.floor(Date.now() / 1000);
        json(200, {
          access_token: `eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.test-mi-${this.tokens}.`,
          client_id: u.searchParams.get('client_id') ?? u.searchParams.get('clientid') ?? 'system-assigned',
          expires_in: '86399',
          expires_on: String(now + 86399),
          not_before: String(now),
          resource: u.searchParams.get('resource'),
          token_type: 'Bearer',
        });
        return;
      }
      if (req.method === 'POST' && u.pathname === `/${TENANT}/oauth2/token`) {
        const form = new URLSearchParams(Buffer.concat(chunks).toString());
        if (
          form.get('grant_type') !== 'client_credentials' ||
          form.get('client_id') !== CLIENT ||
          form.get('client_secret') !== SECRET
        ) {
          json(401, { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.' });
          return;
        }
        this.tokens++;
        const now = Math.floor(Date.now() / 1000);
        json(200, {
          token_type: 'Bearer',
          expires_in: '3599',
          ext_expires_in: '3599',
          expires_on: String(now + 3599),
          not_before: String(now),
          resource: form.get('resource'),
          access_token: `eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.test-${this.tokens}.`,
        });
        return;
      }
      if (!auth.startsWith('Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.test-')) {
        json(401, { error: { code: 'AuthenticationFailed', message: 'Authentication failed.' } });
        return;
      }
      if (this.failing) {
        json(503, { error: { code: 'ServiceUnavailable', message: 'zone unavailable in test' } });
        return;
      }
      const m = new RegExp(
        `^/subscriptions/${SUBSCRIPTION}/resourceGroups/([^/]+)/providers/Microsoft\\.Network/(dnsZones|privateDnsZones)/([^/]+)/(recordsets|ALL)$`,
      ).exec(u.pathname);
      const isPrivate = m?.[2] === 'privateDnsZones';
      const sets = m
        ? (isPrivate ? this.privateZones : this.publicZones).get(`${m[1]}/${decodeURIComponent(m[3]!)}`)
        : undefined;
      if (!m || !sets) {
        json(404, {
          error: {
            code: 'ResourceNotFound',
            message: `The Resource 'Microsoft.Network/${m?.[2] ?? 'dnsZones'}/${m?.[3] ?? ''}' under resource group '${m?.[1] ?? ''}' was not found.`,
          },
        });
        return;
      }
      const from = Number(u.searchParams.get('$skipToken') ?? '0');
      const page = sets.slice(from, from + this.pageSize);
      const more = from + this.pageSize < sets.length;
      const self = `${req.headers.host === 'management.azure.com' ? 'https://management.azure.com' : this.url}${u.pathname}`;
      json(200, {
        value: page,
        ...(more
          ? { nextLink: `${self}?api-version=${u.searchParams.get('api-version')}&$skipToken=${from + this.pageSize}` }
          : {}),
      });
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
