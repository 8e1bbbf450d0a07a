/**
 * A stand-in for Google Cloud DNS on loopback, for the clouddns plugin's tests: the OAuth token
 * endpoint a service-account key names as its `token_uri` (checks the RS256 JWT assertion against
 * the key's public half) and the two Cloud DNS REST v1 calls the plugin makes, `managedZones.get`
 * and `resourceRecordSets.list` (paged), answering with the JSON shapes of the API reference and
 * its errors (`{"error":{"code":404,...}}`). No Google emulator for Cloud DNS exists to run here.
 * `serviceAccountKey()` writes a key file (a fresh RSA key) that points at this server. It also
 * serves the GCE metadata server's token call (`/computeMetadata/v1/instance/service-accounts/
 * default/token`, `Metadata-Flavor: Google` required; any other metadata is "not defined", 404) for
 * `GCE_METADATA_HOST` (`metadataHost`), as documented at
 * https://cloud.google.com/compute/docs/access/authenticate-workloads#applications.
 */
import { createVerify, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export interface GoogleRecordSet {
  readonly name: string;
  readonly type: string;
  readonly ttl: number;
  readonly rrdatas: readonly string[];
}

export class FakeCloudDNS {
  /** `project/zone` → its record sets. */
  readonly zones = new Map<string, GoogleRecordSet[]>();
  readonly requests: { path: string; auth: string }[] = [];
  /** Metadata server requests: path and query, and their Metadata-Flavor header. */
  readonly metadataRequests: { url: string; flavor: string }[] = [];
  /** Record sets per page (paging is exercised when a zone has more). */
  pageSize = 3;
  failing = false;
  private readonly keys: { publicKey: KeyObject; privateKey: KeyObject };
  private readonly tokens = new Set<string>();
  assertions = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {
    this.keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  }

  static async start(): Promise<FakeCloudDNS> {
    let self: FakeCloudDNS | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () =>
        self!.handle(
          req.method ?? '',
          req.url ?? '/',
          String(req.headers.authorization ?? ''),
          Buffer.concat(chunks).toString(),
          String(req.headers['metadata-flavor'] ?? ''),
          (status, body) => {
            res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(body));
          },
        ),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    self = new FakeCloudDNS(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return self;
  }

  /** The value for GCE_METADATA_HOST (host:port, no scheme) that makes this the metadata server. */
  get metadataHost(): string {
    return this.url.replace(/^http:\/\//, '');
  }

  /** A service-account key file in `dir` whose token_uri is this server. */
  serviceAccountKey(dir: string): string {
    const path = join(dir, 'sa.json');
    writeFileSync(
      path,
      JSON.stringify({
        type: 'service_account',
        project_id: 'proj',
        private_key_id: 'k1',
        private_key: this.keys.privateKey.export({ type: 'pkcs8', format: 'pem' }),
        client_email: 'coredns@proj.iam.gserviceaccount.com',
        client_id: '1',
        auth_uri: 'https://accounts.google.com/o/oauth2/auth',
        token_uri: `${this.url}/token`,
      }),
    );
    return path;
  }

  private notFound(what: string): unknown {
    const message = `The 'parameters.managedZone' resource named '${what}' does not exist.`;
    return { error: { code: 404, message, errors: [{ message, domain: 'global', reason: 'notFound' }] } };
  }

  private handle(
    method: string,
    rawUrl: string,
    auth: string,
    body: string,
    flavor: string,
    send: (s: number, b: unknown) => void,
  ): void {
    const u = new URL(rawUrl, 'http://x');
    if (u.pathname.startsWith('/computeMetadata/')) {
      this.metadataRequests.push({ url: rawUrl, flavor });
      if (flavor !== 'Google') return send(403, 'Missing Metadata-Flavor:Google header.');
      if (method !== 'GET' || u.pathname !== '/computeMetadata/v1/instance/service-accounts/default/token') {
        return send(404, 'Not Found');
      }
      this.assertions++;
      const token = `ya29.metadata-${this.assertions}`;
      this.tokens.add(token);
      return send(200, { access_token: token, expires_in: 3599, token_type: 'Bearer' });
    }
    this.requests.push({ path: u.pathname, auth });
    if (method === 'POST' && u.pathname === '/token') {
      const form = new URLSearchParams(body);
      const jwt = form.get('assertion') ?? '';
      const [h, c, s] = jwt.split('.');
      const ok =
        form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:jwt-bearer' &&
        s !== undefined &&
        createVerify('RSA-SHA256').update(`${h}.${c}`).verify(this.keys.publicKey, Buffer.from(s, 'base64url'));
      const claims = ok
        ? (JSON.parse(Buffer.from(c!, 'base64url').toString()) as { aud?: string; scope?: string })
        : {};
      if (!ok || claims.aud !== `${this.url}/token` || !claims.scope?.includes('clouddns')) {
        send(400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
        return;
      }
      this.assertions++;
      const token = `ya29.test-${this.assertions}`;
      this.tokens.add(token);
      send(200, { access_token: token, expires_in: 3599, token_type: 'Bearer' });
      return;
    }
    if (!this.tokens.has(auth.replace(/^Bearer /, ''))) {
      send(401, {
        error: {
          code: 401,
          message: 'Request is missing required authentication credential.',
          errors: [{ message: 'Login Required.', domain: 'global', reason: 'required' }],
        },
      });
      return;
    }
    if (this.failing) {
      send(503, {
        error: {
          code: 503,
          message: 'The service is currently unavailable.',
          errors: [{ message: 'The service is currently unavailable.', domain: 'global', reason: 'backendError' }],
        },
      });
      return;
    }
    const m = /^\/dns\/v1\/projects\/([^/]+)\/managedZones\/([^/]+)(\/rrsets)?$/.exec(u.pathname);
    const key = m ? `${decodeURIComponent(m[1]!)}/${decodeURIComponent(m[2]!)}` : '';
    const sets = this.zones.get(key);
    if (!m || !sets) {
      send(404, this.notFound(m ? decodeURIComponent(m[2]!) : u.pathname));
      return;
    }
    if (!m[3]) {
      send(200, {
        kind: 'dns#managedZone',
        name: decodeURIComponent(m[2]!),
        dnsName: sets[0]?.name ?? '',
        visibility: 'public',
      });
      return;
    }
    const from = Number(u.searchParams.get('pageToken') ?? '0');
    const page = sets.slice(from, from + this.pageSize).map((s) => ({ kind: 'dns#resourceRecordSet', ...s }));
    const next = from + this.pageSize < sets.length ? String(from + this.pageSize) : undefined;
    send(200, { kind: 'dns#resourceRecordSetsListResponse', rrsets: page, ...(next ? { nextPageToken: next } : {}) });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
