/**
 * HTTP side of the tests of health, ready and prometheus: one request to a side listener, the
 * error code of a refused one, and one sample of the process metrics registry.
 */
import * as http from 'node:http';

export interface HttpResult {
  readonly status: number;
  readonly body: string;
  readonly headers: http.IncomingHttpHeaders;
}

/** One HTTP request to 127.0.0.1:port (no keep-alive). */
export function httpRequest(
  port: number,
  path: string,
  o: { method?: string; headers?: Record<string, string>; agent?: http.Agent } = {},
): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: o.method ?? 'GET', headers: o.headers, agent: o.agent ?? false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The error code of a request that fails (e.g. ECONNREFUSED), or 'ok' when it got a response. */
export async function httpErrorCode(port: number, path: string): Promise<string> {
  try {
    await httpRequest(port, path);
    return 'ok';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? String(e);
  }
}

/**
 * Value of one sample from the process registry: `sample` is the series name (`x_count`, `x_bucket`,
 * or the metric itself) and `labels` must match exactly (all labels of the series).
 */
export async function sampleValue(
  metric: string,
  sample: string,
  labels: Record<string, string | number> = {},
): Promise<number | undefined> {
  const { registry } = await import('../../src/metrics/registry.js');
  const m = registry.getSingleMetric(metric);
  if (!m) return undefined;
  const data = await m.get();
  const want = Object.entries(labels)
    .map(([k, v]) => [k, String(v)] as const)
    .sort();
  for (const v of data.values) {
    const name = (v as { metricName?: string }).metricName ?? metric;
    if (name !== sample) continue;
    const got = Object.entries(v.labels)
      .map(([k, x]) => [k, String(x)] as const)
      .sort();
    if (JSON.stringify(got) === JSON.stringify(want)) return v.value;
  }
  return undefined;
}
