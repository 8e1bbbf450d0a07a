/**
 * What kind of reply a message is, as CoreDNS's `plugin/pkg/response` says: `typify` (NOERROR,
 * NXDOMAIN, NODATA, …; the log plugin's `{/log/type}` and the cache's choice of bucket) and
 * `classify` (success / denial / error; the log plugin's `class` filter). Both read counts the
 * caller collected in its own walk over the reply, so no message is decoded for them.
 */
import { Opcode, Qtype, Rcode } from './constants.js';

/** response.Classify's classes. */
export type ReplyClass = 'success' | 'denial' | 'error';

/** response.Typify's names. */
export type ReplyType =
  | 'NOERROR'
  | 'NXDOMAIN'
  | 'NODATA'
  | 'SERVERERROR'
  | 'DELEGATION'
  | 'META'
  | 'UPDATE'
  | 'OTHERERROR';

/** The facts of a reply that typify reads. */
export interface ReplyShape {
  readonly rcode: number;
  /** The request's opcode. */
  readonly opcode: number;
  /** The question's type. */
  readonly qtype: number;
  /** Records in the answer section. */
  readonly answers: number;
  /** The authority section holds an SOA. */
  readonly authoritySoa: boolean;
  /** NS records in the authority section. */
  readonly authorityNs: number;
  /**
   * The query had DO and an RRSIG in the answer is outside its validity period (Typify's
   * `typifyExpired`): OTHERERROR. Only the cache checks it.
   */
  readonly expiredSignature?: boolean;
  /**
   * A NOERROR answer that holds no record of the asked type at the end of its CNAME chain (the
   * cache's check): NODATA with an SOA in the authority section, else OTHERERROR.
   */
  readonly answerMissesQuestion?: boolean;
}

/** response.Typify: what kind of reply this is; no reply at all is OTHERERROR for the caller. */
export function typify(r: ReplyShape): ReplyType {
  if (r.opcode === Opcode.UPDATE) return 'UPDATE';
  if (r.opcode === Opcode.NOTIFY || r.qtype === Qtype.AXFR || r.qtype === Qtype.IXFR) return 'META';
  if (r.expiredSignature === true) return 'OTHERERROR';
  if (r.answers > 0 && r.rcode === Rcode.NOERROR) {
    if (r.answerMissesQuestion !== true) return 'NOERROR';
    return r.authoritySoa ? 'NODATA' : 'OTHERERROR';
  }
  if (r.authoritySoa && r.rcode === Rcode.NOERROR) return 'NODATA';
  if (r.authoritySoa && r.rcode === Rcode.NXDOMAIN) return 'NXDOMAIN';
  if (r.rcode === Rcode.SERVFAIL || r.rcode === Rcode.NOTIMP) return 'SERVERERROR';
  if (r.authorityNs > 0 && r.rcode === Rcode.NOERROR) return 'DELEGATION';
  if (r.rcode === Rcode.NOERROR) return 'NOERROR';
  return 'OTHERERROR';
}

/** response.Classify: success, denial (NXDOMAIN, or NOERROR without answers but with an SOA) or error. */
export function classify(rcode: number, answers: number, authoritySoa: boolean): ReplyClass {
  if (rcode === Rcode.NOERROR) {
    if (answers > 0) return 'success';
    return authoritySoa ? 'denial' : 'success';
  }
  if (rcode === Rcode.NXDOMAIN) return answers > 0 ? 'error' : 'denial';
  return 'error';
}
