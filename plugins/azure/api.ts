/**
 * Azure DNS through Azure Resource Manager's REST API, as the SDK clients CoreDNS 1.15.0 uses call
 * it: public zones `…/providers/Microsoft.Network/dnsZones/ZONE/recordsets?api-version=2018-05-01`,
 * private zones `…/privateDnsZones/ZONE/ALL?api-version=2018-09-01`, following `nextLink`; a bearer
 * token from Azure Active Directory's client-credentials grant (tenant, client, secret) or, without
 * a secret, from the managed identity (src/azure/managedidentity.ts), for the environment's
 * Resource Manager. Errors are worded as go-autorest's.
 */
import type * as http from 'node:http';
import { managedIdentityToken, msiAvailable } from '../../src/azure/managedidentity.js';
import { httpRequest, keepAliveAgent } from '../../src/util/httpclient.js';
import type { AzureConfig } from './setup.js';

/** A record set's properties as listed (JSON names compared without letter case, as Go decodes). */
export type Properties = Readonly<Record<string, unknown>>;

export class AzureApi {
  private readonly agent: http.Agent;
  private token: { value: string; until: number } | null = null;
  /** adal's MSIAvailable, asked once per API client. */
  private msi: Promise<boolean> | null = null;

  constructor(
    private readonly cfg: AzureConfig,
    private readonly env: Readonly<Record<string, string | undefined>> = process.env,
  ) {
    this.agent = keepAliveAgent(cfg.environment.resourceManagerEndpoint.startsWith('https:'));
  }

  close(): void {
    this.agent.destroy();
  }

  /**
   * The bearer token for the Resource Manager, from the source GetAuthorizer picks: with a `secret`,
   * the service principal's client-credentials grant (kept until a minute before expiry); without
   * one, the managed identity (`client`, if given, as a user-assigned identity's id; kept until five
   * minutes before expiry, adal's refresh window), when adal's MSIAvailable says there is one.
   */
  private async bearer(): Promise<string> {
    if (this.token !== null && Date.now() < this.token.until) return this.token.value;
    const { tenant, client, secret, environment } = this.cfg;
    if (!secret) {
      this.msi ??= msiAvailable(this.env);
      if (!(await this.msi)) {
        this.msi = null; // asked again on the next listing: an identity may be assigned later
        throw new Error('MSI not available');
      }
      const t = await managedIdentityToken(environment.resourceManagerEndpoint, client ?? '', this.env);
      this.token = { value: t.token, until: Date.now() + Math.max(0, t.expiresIn - 300) * 1000 };
      return t.token;
    }
    if (!tenant || !client) {
      throw new Error('clusterdns needs tenant and client beside secret for a service principal');
    }
    const url = new URL(`${tenant}/oauth2/token?api-version=1.0`, environment.activeDirectoryEndpoint);
    const body = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: client,
      client_secret: secret,
      resource: environment.resourceManagerEndpoint,
    }).toString();
    let res;
    try {
      res = await httpRequest({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
    } catch (e) {
      throw new Error(
        `adal: Failed to execute the refresh request. Error = 'Post ${JSON.stringify(url.href)}: ${(e as Error).message}'`,
      );
    }
    if (res.status !== 200) {
      throw new Error(`adal: Refresh request failed. Status Code = '${res.status}'. Response body: ${res.body}`);
    }
    const j = JSON.parse(res.body) as { access_token?: string; expires_in?: string | number };
    if (!j.access_token) throw new Error('adal: Refresh request failed: no access_token');
    this.token = { value: j.access_token, until: Date.now() + Math.max(0, Number(j.expires_in ?? 3600) - 60) * 1000 };
    return j.access_token;
  }

  private async getJson(op: string, url: URL, signal?: AbortSignal): Promise<{ value?: unknown[]; nextLink?: string }> {
    const token = await this.bearer();
    let res;
    try {
      res = await httpRequest({
        method: 'GET',
        url,
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
        agent: this.agent,
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      throw new Error(
        `${op}: Failure sending request: StatusCode=0 -- Original Error: Get ${JSON.stringify(url.href)}: ${(e as Error).message}`,
      );
    }
    if (res.status !== 200) {
      let code = '';
      let message = '';
      try {
        const j = JSON.parse(res.body) as { error?: { code?: string; message?: string } };
        code = j.error?.code ?? '';
        message = j.error?.message ?? '';
      } catch {
        // not JSON
      }
      throw new Error(
        `${op}: Failure responding to request: StatusCode=${res.status} -- Original Error: autorest/azure: Service returned an error. Status=${res.status} Code=${JSON.stringify(code)} Message=${JSON.stringify(message)}`,
      );
    }
    return JSON.parse(res.body) as { value?: unknown[]; nextLink?: string };
  }

  /** Every record set's properties of one zone, all pages. */
  async list(resourceGroup: string, zone: string, isPrivate: boolean, signal?: AbortSignal): Promise<Properties[]> {
    const base = this.cfg.environment.resourceManagerEndpoint;
    const path = `subscriptions/${encodeURIComponent(this.cfg.subscription)}/resourceGroups/${encodeURIComponent(resourceGroup)}/providers/Microsoft.Network/${
      isPrivate ? 'privateDnsZones' : 'dnsZones'
    }/${encodeURIComponent(zone)}/${isPrivate ? 'ALL' : 'recordsets'}`;
    let url: URL | null = new URL(`${path}?api-version=${isPrivate ? '2018-09-01' : '2018-05-01'}`, base);
    const op = isPrivate ? 'privatedns.RecordSetsClient#List' : 'dns.RecordSetsClient#ListByDNSZone';
    const out: Properties[] = [];
    while (url !== null) {
      const page = await this.getJson(op, url, signal);
      for (const v of page.value ?? []) {
        const p = (v as { properties?: unknown }).properties;
        if (p !== null && typeof p === 'object') out.push(p as Properties);
      }
      url = page.nextLink ? new URL(page.nextLink) : null;
    }
    return out;
  }
}
