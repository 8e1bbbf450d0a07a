/**
 * The two Route 53 REST calls CoreDNS 1.15.0's route53 makes (API version 2013-04-01, XML):
 * `ListHostedZonesByName` to check each ZONE:HOSTED_ZONE_ID at start, and `ListResourceRecordSets`
 * page by page (1000 sets a page) for every refresh. Signed with SigV4 (src/aws/sigv4.ts); errors worded as
 * aws-sdk-go-v2's `operation error Route 53: …` so that the start failure reads as CoreDNS's.
 */
import type * as http from 'node:http';
import { httpRequest, keepAliveAgent, type HttpReply } from '../../src/util/httpclient.js';
import { type AwsCredentials, signRequest } from '../../src/aws/sigv4.js';
import type { AwsConfig } from '../../src/aws/config.js';

/** One resource record set as the API lists it (alias sets have no values). */
export interface RecordSet {
  readonly name: string;
  readonly type: string;
  readonly ttl: number;
  readonly values: readonly string[];
}

export interface RecordSetPage {
  readonly sets: RecordSet[];
  readonly next: { name: string; type: string; identifier: string | null } | null;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The endpoint and signing region: `aws_endpoint`, else `AWS_ENDPOINT_URL_ROUTE_53` or
 * `AWS_ENDPOINT_URL` (aws-sdk-go-v2's service endpoint variables), else the partition's global
 * Route 53 endpoint, whose signing region is fixed.
 */
export function route53Endpoint(option: string | null, region: string, env: Env): { base: string; region: string } {
  const ignore = (env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS ?? '').toLowerCase() === 'true';
  const configured = option ?? (ignore ? undefined : env.AWS_ENDPOINT_URL_ROUTE_53 || env.AWS_ENDPOINT_URL);
  if (configured) return { base: configured.replace(/\/+$/, ''), region };
  if (region.startsWith('cn-')) return { base: 'https://route53.amazonaws.com.cn', region: 'cn-northwest-1' };
  if (region.startsWith('us-gov-')) return { base: 'https://route53.us-gov.amazonaws.com', region: 'us-gov-west-1' };
  if (region.startsWith('us-iso-')) return { base: 'https://route53.c2s.ic.gov', region: 'us-iso-east-1' };
  if (region.startsWith('us-isob-')) return { base: 'https://route53.sc2s.sgov.gov', region: 'us-isob-east-1' };
  return { base: 'https://route53.amazonaws.com', region: 'us-east-1' };
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** XML character data to text. */
function xmlText(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#\d+|[a-z]+);/g, (m, e: string) => {
    if (e.startsWith('#x')) return String.fromCodePoint(Number.parseInt(e.slice(2), 16));
    if (e.startsWith('#')) return String.fromCodePoint(Number.parseInt(e.slice(1), 10));
    return ENTITIES[e] ?? m;
  });
}

/** The text of the first `<tag>` element in `xml` (null when absent). */
function element(xml: string, tag: string): string | null {
  const m = new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`).exec(xml);
  return m ? xmlText(m[1]!) : null;
}

/** The bodies of every `<tag>` element in `xml`. */
function elements(xml: string, tag: string): string[] {
  const out: string[] = [];
  const re = new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`, 'g');
  for (let m = re.exec(xml); m !== null; m = re.exec(xml)) out.push(m[1]!);
  return out;
}

/** Parse a ListResourceRecordSets response body. */
export function parseRecordSets(xml: string): RecordSetPage {
  const sets: RecordSet[] = [];
  for (const body of elements(xml, 'ResourceRecordSet')) {
    const records = /<ResourceRecords>([\s\S]*?)<\/ResourceRecords>/.exec(body)?.[1] ?? '';
    sets.push({
      name: element(body, 'Name') ?? '',
      type: element(body, 'Type') ?? '',
      ttl: Number(element(body, 'TTL') ?? '0'),
      values: elements(records, 'Value').map(xmlText),
    });
  }
  const truncated = element(xml, 'IsTruncated') === 'true';
  return {
    sets,
    next: truncated
      ? {
          name: element(xml, 'NextRecordName') ?? '',
          type: element(xml, 'NextRecordType') ?? '',
          identifier: element(xml, 'NextRecordIdentifier'),
        }
      : null,
  };
}

/** aws-sdk-go-v2 strips the `/hostedzone/` prefix from a hosted zone id. */
function zoneId(id: string): string {
  return id.replace(/^\/?hostedzone\//, '');
}

export class Route53Api {
  private readonly agent: http.Agent;

  constructor(
    private readonly cfg: AwsConfig,
    private readonly endpoint: { base: string; region: string },
  ) {
    this.agent = keepAliveAgent(endpoint.base.startsWith('https:'));
  }

  close(): void {
    this.agent.destroy();
  }

  private async get(op: string, path: string, query: [string, string][], signal?: AbortSignal): Promise<string> {
    const url = new URL(this.endpoint.base + path);
    for (const [k, v] of query) url.searchParams.append(k, v);
    let credentials: AwsCredentials;
    try {
      credentials = await this.cfg.credentials.get(signal);
    } catch (e) {
      // Temporary keys are fetched on first use and when due, worded as aws-sdk-go-v2's cache. The
      // SDK's retryer retries the operation when the source could not be reached, and says so.
      const why = (e as Error).message;
      const retried = why.includes('request send failed') ? 'exceeded maximum number of attempts, 3, ' : '';
      throw new Error(
        `operation error Route 53: ${op}, ${retried}get identity: get credentials: failed to refresh cached credentials, ${why}`,
      );
    }
    const headers = signRequest({ method: 'GET', url, region: this.endpoint.region, service: 'route53', credentials });
    let res: HttpReply;
    try {
      res = await httpRequest({ method: 'GET', url, headers, agent: this.agent, ...(signal ? { signal } : {}) });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      const why = err.code === 'ECONNREFUSED' ? `dial tcp ${url.host}: connect: connection refused` : err.message;
      throw new Error(
        `operation error Route 53: ${op}, https response error StatusCode: 0, RequestID: , request send failed, Get ${JSON.stringify(url.href)}: ${why}`,
      );
    }
    const body = res.body;
    if (res.status >= 300) {
      const rid = String(res.headers['x-amzn-requestid'] ?? element(body, 'RequestId') ?? '');
      const code = element(body, 'Code') ?? 'UnknownError';
      const message = element(body, 'Message') ?? '';
      throw new Error(
        `operation error Route 53: ${op}, https response error StatusCode: ${res.status}, RequestID: ${rid}, ${code}: ${message}`,
      );
    }
    return body;
  }

  /** CoreDNS's check that a zone name / hosted zone id pair exists (an error when the call fails). */
  async listHostedZonesByName(dnsName: string, hostedZoneId: string, signal?: AbortSignal): Promise<void> {
    await this.get(
      'ListHostedZonesByName',
      '/2013-04-01/hostedzonesbyname',
      [
        ['dnsname', dnsName],
        ['hostedzoneid', zoneId(hostedZoneId)],
      ],
      signal,
    );
  }

  /** One page of a hosted zone's record sets, from `start` (the previous page's `next`). */
  async listResourceRecordSets(
    hostedZoneId: string,
    start: RecordSetPage['next'],
    signal?: AbortSignal,
  ): Promise<RecordSetPage> {
    const q: [string, string][] = [['maxitems', '1000']];
    if (start !== null) {
      q.push(['name', start.name], ['type', start.type]);
      if (start.identifier !== null) q.push(['identifier', start.identifier]);
    }
    const body = await this.get(
      'ListResourceRecordSets',
      `/2013-04-01/hostedzone/${encodeURIComponent(zoneId(hostedZoneId))}/rrset`,
      q,
      signal,
    );
    return parseRecordSets(body);
  }
}
