/**
 * One request to a credential or metadata endpoint (EC2 instance metadata, STS, ECS/EKS container
 * credentials, GCE metadata, Azure managed identity), always with a deadline: these endpoints sit on
 * link-local addresses that, off their cloud, drop packets rather than refuse them, and a start
 * that waits on one must fail with a reason instead of hanging. Errors are worded as Go's
 * net/http client words them (`Get "URL": dial tcp HOST: connect: connection refused`), which is
 * what CoreDNS's SDKs put in their errors.
 */
import { httpRequest, type HttpReply } from './httpclient.js';

export interface MetadataRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** The whole request's deadline, connect to last byte. */
  readonly timeoutMs: number;
  /** The caller's cancellation (a stopping server), on top of the deadline. */
  readonly signal?: AbortSignal;
}

/** Go's method name as net/http prints it in `Get "URL"`. */
function goMethod(m: string): string {
  return m.charAt(0) + m.slice(1).toLowerCase();
}

/** The request and its whole reply; rejects with a Go-worded Error on failure or deadline. */
export async function metadataRequest(r: MetadataRequest): Promise<HttpReply> {
  const deadline = AbortSignal.timeout(r.timeoutMs);
  const signal = r.signal ? AbortSignal.any([deadline, r.signal]) : deadline;
  try {
    return await httpRequest({
      method: r.method,
      url: r.url,
      ...(r.headers ? { headers: r.headers } : {}),
      ...(r.body !== undefined ? { body: r.body } : {}),
      signal,
    });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const host = r.url.port ? r.url.host : `${r.url.host}:${r.url.protocol === 'https:' ? 443 : 80}`;
    let why: string;
    if (deadline.aborted) why = `context deadline exceeded (no reply within ${r.timeoutMs}ms)`;
    else if (err.code === 'ECONNREFUSED') why = `dial tcp ${host}: connect: connection refused`;
    else if (err.code === 'EHOSTUNREACH' || err.code === 'ENETUNREACH')
      why = `dial tcp ${host}: connect: ${err.code === 'EHOSTUNREACH' ? 'no route to host' : 'network is unreachable'}`;
    else why = err.message;
    throw new Error(`${goMethod(r.method)} ${JSON.stringify(r.url.href)}: ${why}`);
  }
}
