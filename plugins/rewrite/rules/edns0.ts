/** `rewrite edns0`: set, append, replace or unset EDNS0 local, variable, NSID and subnet options. */
import { isIPv4 } from 'node:net';
import { ipv6ToBytes } from '../../../src/dns/name.js';
import { EdnsRemoveResponseRule, EdnsRestoreResponseRule } from '../response.js';
import { EDNS_NSID, EDNS_SUBNET, type RewriteState } from '../state.js';
import { isMetadataLabel } from './name.js';
import { RuleError, type Mode, type Rule } from './rule.js';

type Action = 'append' | 'replace' | 'set' | 'unset';

/** Go's strconv.ParseUint(s, 0, 16) error, or the value. */
function parseUint16(s: string): number {
  let body = s;
  let base = 10;
  if (/^0[xX]/.test(s)) [base, body] = [16, s.slice(2)];
  else if (/^0[bB]/.test(s)) [base, body] = [2, s.slice(2)];
  else if (/^0[oO]/.test(s)) [base, body] = [8, s.slice(2)];
  else if (/^0\d/.test(s)) [base, body] = [8, s.slice(1)];
  const digits = {
    2: /^[01]+(_?[01]+)*$/,
    8: /^[0-7]+(_?[0-7]+)*$/,
    10: /^\d+$/,
    16: /^[0-9a-fA-F]+(_?[0-9a-fA-F]+)*$/,
  }[base]!;
  if (body === '' || !digits.test(body) || (base === 10 && body.includes('_')))
    throw new RuleError(`strconv.ParseUint: parsing ${JSON.stringify(s)}: invalid syntax`);
  const n = parseInt(body.replace(/_/g, ''), base);
  if (n > 0xffff) throw new RuleError(`strconv.ParseUint: parsing ${JSON.stringify(s)}: value out of range`);
  return n;
}

function hexDecode(s: string): Buffer {
  for (let i = 0; i < s.length; i++) {
    if (!/[0-9a-fA-F]/.test(s[i]!))
      throw new RuleError(
        `encoding/hex: invalid byte: U+${s.charCodeAt(i).toString(16).toUpperCase().padStart(4, '0')} '${s[i]}'`,
      );
  }
  if (s.length % 2 === 1) throw new RuleError('encoding/hex: odd length hex string');
  return Buffer.from(s, 'hex');
}

/** Option codes miekg/dns decodes into their own types (never matched as a "local" option). */
const TYPED_CODES = new Set([1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 15]);

class EdnsLocalRule implements Rule {
  readonly ednsCodes: readonly number[];
  constructor(
    readonly mode: Mode,
    private readonly action: Action,
    private readonly code: number,
    private readonly data: Buffer,
    private readonly revert: boolean,
  ) {
    this.ednsCodes = [code];
  }
  matches(): boolean {
    return true;
  }
  apply(st: RewriteState): boolean {
    const opts = st.options();
    if (this.action === 'unset') {
      st.setOptions(opts.filter((o) => o.code !== this.code));
      return true;
    }
    if ((this.action === 'replace' || this.action === 'set') && !TYPED_CODES.has(this.code)) {
      const i = opts.findIndex((o) => o.code === this.code);
      if (i >= 0) {
        if (this.revert) st.response.push(new EdnsRestoreResponseRule(this.code, opts[i]!.data));
        opts[i] = { code: this.code, data: this.data };
        st.setOptions(opts);
        return true;
      }
    }
    if (this.action === 'append' || this.action === 'set') {
      opts.push({ code: this.code, data: this.data });
      st.setOptions(opts);
      if (this.revert) st.response.push(new EdnsRemoveResponseRule(this.code));
      return true;
    }
    return false;
  }
}

const VARIABLES = ['{qname}', '{qtype}', '{client_ip}', '{client_port}', '{protocol}', '{server_ip}', '{server_port}'];

function ipBytes(family: 1 | 2, ip: string): Buffer {
  if (family === 1) {
    const v4 = ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
    return isIPv4(v4) ? Buffer.from(v4.split('.').map(Number)) : Buffer.alloc(0);
  }
  if (isIPv4(ip)) return Buffer.from([...new Array<number>(10).fill(0), 0xff, 0xff, ...ip.split('.').map(Number)]);
  return Buffer.from(ipv6ToBytes(ip) ?? new Uint8Array(0));
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n & 0xffff);
  return b;
}

class EdnsVariableRule implements Rule {
  readonly ednsCodes: readonly number[];
  constructor(
    readonly mode: Mode,
    private readonly action: Action,
    private readonly code: number,
    private readonly variable: string,
    private readonly revert: boolean,
  ) {
    this.ednsCodes = [code];
  }
  matches(): boolean {
    return true;
  }
  private value(st: RewriteState): Buffer | null {
    const t = st.query.transport;
    switch (this.variable) {
      case '{qname}':
        return Buffer.from(st.name);
      case '{qtype}':
        return u16(st.qtype);
      case '{client_ip}':
        return ipBytes(t.family, t.remoteAddress);
      case '{server_ip}':
        return ipBytes(t.family, t.localAddress);
      case '{client_port}':
        return u16(t.remotePort);
      case '{server_port}':
        return u16(t.localPort);
      case '{protocol}':
        return Buffer.from(t.proto);
    }
    const v = st.metadata(this.variable.slice(1, -1));
    return v ? Buffer.from(v) : null;
  }
  apply(st: RewriteState): boolean {
    const data = this.value(st);
    if (data === null) return false;
    const opts = st.options();
    const i = TYPED_CODES.has(this.code) ? -1 : opts.findIndex((o) => o.code === this.code);
    if (i >= 0) {
      if (this.action === 'replace' || this.action === 'set') {
        if (this.revert) st.response.push(new EdnsRestoreResponseRule(this.code, opts[i]!.data));
        opts[i] = { code: this.code, data };
        st.setOptions(opts);
        return true;
      }
      return false;
    }
    if (this.action === 'append' || this.action === 'set') {
      opts.push({ code: this.code, data });
      st.setOptions(opts);
      if (this.revert) st.response.push(new EdnsRemoveResponseRule(this.code));
      return true;
    }
    return false;
  }
}

class EdnsNsidRule implements Rule {
  constructor(
    readonly mode: Mode,
    private readonly action: Action,
    private readonly revert: boolean,
  ) {}
  matches(): boolean {
    return true;
  }
  apply(st: RewriteState): boolean {
    const opts = st.options();
    if (this.action === 'unset') {
      st.setOptions(opts.filter((o) => o.code !== EDNS_NSID));
      return true;
    }
    const i = opts.findIndex((o) => o.code === EDNS_NSID);
    if (i >= 0 && (this.action === 'replace' || this.action === 'set')) {
      if (this.revert) st.response.push(new EdnsRestoreResponseRule(EDNS_NSID, opts[i]!.data));
      opts[i] = { code: EDNS_NSID, data: Buffer.alloc(0) };
      st.setOptions(opts);
      return true;
    }
    if (this.action === 'append' || this.action === 'set') {
      opts.push({ code: EDNS_NSID, data: Buffer.alloc(0) });
      st.setOptions(opts);
      if (this.revert) st.response.push(new EdnsRemoveResponseRule(EDNS_NSID));
      return true;
    }
    return false;
  }
}

class EdnsSubnetRule implements Rule {
  constructor(
    readonly mode: Mode,
    private readonly action: Action,
    private readonly v4: number,
    private readonly v6: number,
    private readonly revert: boolean,
  ) {}
  matches(): boolean {
    return true;
  }
  /** The ECS option data for the client's address (family, source prefix, scope 0, address truncated). */
  private ecs(st: RewriteState): Buffer {
    const t = st.query.transport;
    const bits = t.family === 1 ? this.v4 : this.v6;
    const addr = ipBytes(t.family, t.remoteAddress);
    const n = Math.ceil(bits / 8);
    const out = Buffer.alloc(4 + n);
    out.writeUInt16BE(t.family, 0);
    out[2] = bits;
    out[3] = 0;
    for (let i = 0; i < n; i++) {
      const keep = Math.min(8, bits - i * 8);
      out[4 + i] = (addr[i] ?? 0) & ((0xff << (8 - keep)) & 0xff);
    }
    return out;
  }
  apply(st: RewriteState): boolean {
    const opts = st.options();
    if (this.action === 'unset') {
      st.setOptions(opts.filter((o) => o.code !== EDNS_SUBNET));
      return true;
    }
    const i = opts.findIndex((o) => o.code === EDNS_SUBNET);
    if (i >= 0) {
      if (this.action === 'replace' || this.action === 'set') {
        if (this.revert) st.response.push(new EdnsRestoreResponseRule(EDNS_SUBNET, opts[i]!.data));
        opts[i] = { code: EDNS_SUBNET, data: this.ecs(st) };
        st.setOptions(opts);
        return true;
      }
      return false;
    }
    if (this.action === 'append' || this.action === 'set') {
      opts.push({ code: EDNS_SUBNET, data: this.ecs(st) });
      st.setOptions(opts);
      if (this.revert) st.response.push(new EdnsRemoveResponseRule(EDNS_SUBNET));
      return true;
    }
    return false;
  }
}

export function newEdnsRule(mode: Mode, argsIn: readonly string[]): Rule {
  let args = argsIn;
  if (args.length < 2) throw new RuleError('too few arguments for an EDNS0 rule');
  const ruleType = args[0]!.toLowerCase();
  const action = args[1]!.toLowerCase();
  if (action === 'unset') {
    switch (ruleType) {
      case 'local':
        if (args.length !== 3) throw new RuleError('local unset action requires exactly two arguments');
        return new EdnsLocalRule(mode, 'unset', parseUint16(args[2]!), Buffer.alloc(0), false);
      case 'nsid':
        if (args.length !== 2) throw new RuleError('nsid unset action requires exactly one argument');
        return new EdnsNsidRule(mode, 'unset', false);
      case 'subnet':
        if (args.length !== 2) throw new RuleError('subnet unset action requires exactly one argument');
        return new EdnsSubnetRule(mode, 'unset', 0, 0, false);
      default:
        throw new RuleError(`invalid rule type ${JSON.stringify(ruleType)}`);
    }
  }
  if (action !== 'append' && action !== 'replace' && action !== 'set')
    throw new RuleError(`invalid action: ${JSON.stringify(action)}`);
  let revert = false;
  if (args[args.length - 1] === 'revert') {
    revert = true;
    args = args.slice(0, -1);
  }
  switch (ruleType) {
    case 'local': {
      if (args.length !== 4) throw new RuleError('EDNS0 local rules require three or four args');
      const data = args[3]!;
      if (data.startsWith('{') && data.endsWith('}')) {
        const code = parseUint16(args[2]!);
        if (!VARIABLES.includes(data) && !isMetadataLabel(data.slice(1, -1)))
          throw new RuleError(`unsupported variable name ${JSON.stringify(data)}`);
        return new EdnsVariableRule(mode, action, code, data, revert);
      }
      const code = parseUint16(args[2]!);
      const bytes = data.startsWith('0x') ? hexDecode(data.slice(2)) : Buffer.from(data);
      return new EdnsLocalRule(mode, action, code, bytes, revert);
    }
    case 'nsid':
      if (args.length !== 2) throw new RuleError('EDNS0 NSID rules can accept no more than one arg');
      return new EdnsNsidRule(mode, action, revert);
    case 'subnet': {
      if (args.length !== 4) throw new RuleError('EDNS0 subnet rules require three or four args');
      const v4 = parseUint16(args[2]!);
      if (v4 > 32) throw new RuleError(`invalid IPv4 bit mask length ${v4}`);
      const v6 = parseUint16(args[3]!);
      if (v6 > 128) throw new RuleError(`invalid IPv6 bit mask length ${v6}`);
      return new EdnsSubnetRule(mode, action, v4, v6, revert);
    }
    default:
      throw new RuleError(`invalid rule type ${JSON.stringify(ruleType)}`);
  }
}
