/**
 * The two Cloud DNS REST v1 calls CoreDNS 1.15.0's clouddns makes: `managedZones.get` to check each
 * PROJECT:ZONE at start, and `resourceRecordSets.list` page by page for every refresh, on
 * `https://dns.googleapis.com/` or the `endpoint`. Errors are worded as Go's googleapi.Error.
 */
import type * as http from 'node:http';
import { httpRequest, keepAliveAgent } from '../../src/util/httpclient.js';
import type { TokenSource } from './auth.js';

/** One resource record set as the API lists it. */
export interface GoogleRecordSet {
  readonly name: string;
  readonly type: string;
  readonly ttl: number;
  readonly rrdatas: readonly string[];
}

interface ApiError {
  error?: { code?: number; message?: string; errors?: { reason?: string; message?: string }[] };
}

/** googleapi.Error's text. */
function googleError(status: number, body: string): string {
  let j: ApiError = {};
  try {
    j = JSON.parse(body) as ApiError;
  } catch {
    // not JSON
  }
  const e = j.error;
  const errors = e?.errors ?? [];
  if (!e || (errors.length === 0 && !e.message))
    return `googleapi: got HTTP response code ${status} with body: ${body}`;
  let s = `googleapi: Error ${e.code ?? status}: ${e.message ?? ''}`;
  if (errors.length === 0) return s.trim();
  if (errors.length === 1 && errors[0]!.message === e.message) return `${s}, ${errors[0]!.reason ?? ''}`;
  s += '\nMore details:\n';
  for (const x of errors) s += `Reason: ${x.reason ?? ''}, Message: ${x.message ?? ''}\n`;
  return s;
}

export class CloudDNSApi {
  private readonly base: string;
  private readonly agent: http.Agent;

  constructor(
    endpoint: string | null,
    private readonly auth: TokenSource,
  ) {
    this.base = endpoint ?? 'https://dns.googleapis.com/';
    this.agent = keepAliveAgent(this.base.startsWith('https:'));
  }

  close(): void {
    this.agent.destroy();
  }

  private async get(rel: string, params: [string, string][], signal?: AbortSignal): Promise<unknown> {
    // googleapi.ResolveRelative: the path relative to the base URL.
    const url = new URL(rel, this.base);
    for (const [k, v] of [['alt', 'json'], ['prettyPrint', 'false'], ...params] as [string, string][])
      url.searchParams.set(k, v);
    const token = await this.auth.token();
    let res;
    try {
      res = await httpRequest({
        method: 'GET',
        url,
        headers: { authorization: `Bearer ${token}` },
        agent: this.agent,
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      const why = err.code === 'ECONNREFUSED' ? `dial tcp ${url.host}: connect: connection refused` : err.message;
      throw new Error(`Get ${JSON.stringify(url.href)}: ${why}`);
    }
    if (res.status < 200 || res.status > 299) throw new Error(googleError(res.status, res.body));
    return JSON.parse(res.body) as unknown;
  }

  private static path(project: string, zone: string): string {
    return `dns/v1/projects/${encodeURIComponent(project)}/managedZones/${encodeURIComponent(zone)}`;
  }

  async zoneExists(project: string, zone: string): Promise<void> {
    await this.get(CloudDNSApi.path(project, zone), []);
  }

  /** Every record set of the zone, all pages. */
  async listRRSets(project: string, zone: string, signal?: AbortSignal): Promise<GoogleRecordSet[]> {
    const out: GoogleRecordSet[] = [];
    let pageToken = '';
    do {
      const page = (await this.get(
        `${CloudDNSApi.path(project, zone)}/rrsets`,
        pageToken ? [['pageToken', pageToken]] : [],
        signal,
      )) as { rrsets?: GoogleRecordSet[]; nextPageToken?: string };
      out.push(...(page.rrsets ?? []));
      pageToken = page.nextPageToken ?? '';
    } while (pageToken !== '');
    return out;
  }
}
