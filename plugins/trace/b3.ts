/**
 * B3 propagation (https://github.com/openzipkin/b3-propagation), read from a DNS-over-HTTPS
 * request's headers: CoreDNS's *trace* continues the trace of a DoH client that sends them
 * (zipkin-go's `b3.ExtractHTTP`: the single `b3` header first, then the `X-B3-*` ones).
 * Invalid headers are ignored, as CoreDNS ignores the extraction error: the query gets a trace of
 * its own.
 */
import type { SpanContext } from '../../src/tracing/span.js';

/** HTTP request headers as node:http gives them (lower-case names). */
export type HttpHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** The extracted context, or null when the headers carry none (or a malformed one). */
export function extractB3(headers: HttpHeaders): Partial<SpanContext> | null {
  const single = header(headers, 'b3');
  if (single !== '') {
    const sc = parseSingle(single);
    if (sc !== null) return sc;
  }
  return parseMulti(
    header(headers, 'x-b3-traceid'),
    header(headers, 'x-b3-spanid'),
    header(headers, 'x-b3-parentspanid'),
    header(headers, 'x-b3-sampled'),
    header(headers, 'x-b3-flags'),
  );
}

/** Go's Header.Get: the first value, '' when absent. */
function header(h: HttpHeaders, name: string): string {
  const v = h[name];
  if (v === undefined) return '';
  return typeof v === 'string' ? v : (v[0] ?? '');
}

const HEX = /^[0-9a-fA-F]{1,16}$/;

/** A 64-bit id in hex as zipkin-go prints it (16 digits), or null when not hex. */
function id64(s: string): string | null {
  return HEX.test(s) ? s.toLowerCase().padStart(16, '0') : null;
}

/**
 * A trace id (up to 32 hex digits) as zipkin-go's TraceIDFromHex reads it and TraceID.String
 * prints it: 16 digits when the high half is zero, else 32.
 */
function traceId(s: string): string | null {
  if (s.length > 32 || !/^[0-9a-fA-F]+$/.test(s)) return null;
  const full = s.toLowerCase().padStart(32, '0');
  return full.startsWith('0000000000000000') ? full.slice(16) : full;
}

/** zipkin-go's b3.ParseHeaders. */
function parseMulti(
  tid: string,
  sid: string,
  pid: string,
  sampled: string,
  flags: string,
): Partial<SpanContext> | null {
  const sc: { -readonly [K in keyof SpanContext]?: SpanContext[K] } = {};
  switch (sampled.toLowerCase()) {
    case '0':
    case 'false':
      sc.sampled = false;
      break;
    case '1':
    case 'true':
      sc.sampled = true;
      break;
    case '':
      break;
    default:
      return null;
  }
  if (flags === '1') {
    sc.debug = true;
    delete sc.sampled;
  }
  let required = 0;
  if (tid !== '') {
    required++;
    const t = traceId(tid);
    if (t === null) return null;
    sc.traceId = t;
  }
  if (sid !== '') {
    required++;
    const s = id64(sid);
    if (s === null) return null;
    sc.spanId = s;
  }
  if (required !== 0 && required !== 2) return null;
  if (pid !== '') {
    if (required === 0) return null;
    const p = id64(pid);
    if (p === null) return null;
    sc.parentId = p;
  }
  if (sc.traceId === undefined && sc.sampled === undefined && sc.debug === undefined) return null;
  return sc;
}

/** zipkin-go's b3.ParseSingleHeader: `{traceid}-{spanid}[-{sampling}[-{parentid}]]` or one flag. */
function parseSingle(h: string): Partial<SpanContext> | null {
  const sc: { -readonly [K in keyof SpanContext]?: SpanContext[K] } = {};
  let sampling = '';
  if (h.length === 1) sampling = h;
  else if (h.length === 16 || h.length === 32) return null;
  else if (h.length >= 33) {
    const pos = h[16] !== '-' ? 16 : 0;
    const t = traceId(h.slice(0, pos + 16));
    const s = id64(h.slice(pos + 17, pos + 33));
    if (t === null || s === null || h[pos + 16] !== '-') return null;
    sc.traceId = t;
    sc.spanId = s;
    const rest = h.length - (pos + 33);
    if (rest > 0) {
      if (rest === 2) sampling = h[pos + 34]!;
      else if (rest === 19) {
        sampling = h[pos + 34]!;
        const p = id64(h.slice(pos + 36));
        if (p === null) return null;
        sc.parentId = p;
      } else return null;
    }
  } else return null;
  switch (sampling) {
    case 'd':
      sc.debug = true;
      break;
    case '1':
      sc.sampled = true;
      break;
    case '0':
      sc.sampled = false;
      break;
    case '':
      break;
    default:
      return null;
  }
  return sc;
}
