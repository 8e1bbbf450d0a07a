/**
 * The intentional (or inevitable) differences between clusterdns and CoreDNS 1.15.0, as data:
 * each rule names the differences it tolerates and why. The differential suite and the
 * `shadow` plugin use this list; anything a rule does not cover is a mismatch. Keep every entry
 * justified: a rule is a claim that the difference does not matter to a client.
 */
import type { ToleranceRule } from './compare.js';

export const TOLERANCE_RULES: readonly ToleranceRule[] = [
  {
    id: 'loadbalance-shuffle',
    reason: 'loadbalance shuffles A/AAAA/MX records on every reply in both servers; the order is random by design.',
    match: { kinds: ['order'], plugins: ['loadbalance'] },
  },
  {
    id: 'kubernetes-index-order',
    reason:
      'CoreDNS returns several endpoints/services in the order of its informer indexes (Go map iteration), which is not deterministic; clients must not rely on it.',
    match: { kinds: ['order'], plugins: ['kubernetes'] },
  },
  {
    id: 'cache-ttl-aging',
    reason:
      "Both caches count a cached answer's TTL down independently; two replies sent a moment apart may fall on different sides of a second boundary.",
    match: { kinds: ['ttl'], plugins: ['cache'], window: 1 },
  },
  {
    id: 'soa-serial-clock',
    reason:
      'The kubernetes SOA serial is the time (Unix seconds) the server last saw the cluster change; two servers started a moment apart on the same cluster differ by that moment.',
    match: { kinds: ['serial'], plugins: ['kubernetes'], window: 120 },
  },
  {
    id: 'etcd-soa-serial-clock',
    reason:
      "The etcd plugin's SOA serial is the time (Unix seconds) the reply is built, in both servers (CoreDNS's Etcd.Serial); two replies built a moment apart may fall on different sides of a second boundary.",
    match: { kinds: ['serial'], plugins: ['etcd'], window: 2 },
  },
  {
    id: 'name-case',
    reason:
      "DNS names compare case-insensitively (RFC 4343): for a question in mixed letter case, records whose names differ from CoreDNS's only in case (the owner of an additional record, an SOA's mname) are the same records to every client.",
    match: { kinds: ['case'], mixedCase: true },
  },
  {
    id: 'whoami-client-port',
    reason: "whoami reports the client's source port; the two servers are asked from different sockets.",
    match: { kinds: ['additional'], plugins: ['whoami'], record: /^_(udp|tcp)\.\S+ IN SRV 0 0 \d+ \.$/ },
  },
  {
    id: 'kubernetes-ns-dns-case',
    reason:
      'CoreDNS 1.15.0 compares the `ns.dns.<zone>` label case-sensitively: for a mixed-case question it answers NXDOMAIN for a name that exists in lower case. clusterdns compares names case-insensitively (RFC 4343) and answers as for the lower-case name.',
    match: {
      kinds: ['rcode', 'answer', 'authority', 'additional', 'size'],
      plugins: ['kubernetes'],
      qname: /^ns\.dns\./,
      mixedCase: true,
    },
  },
  {
    id: 'kubernetes-apex-ns-case',
    reason:
      'CoreDNS 1.15.0 recognises the zone apex for NS case-sensitively: a mixed-case `NS` question for the apex gets NODATA instead of the NS record. clusterdns answers it as for the lower-case name.',
    match: {
      kinds: ['answer', 'authority', 'additional', 'size'],
      plugins: ['kubernetes'],
      qtypes: ['NS'],
      qname: /^(cluster\.local|clusterset\.local|in-addr\.arpa|ip6\.arpa)\.$/,
      mixedCase: true,
    },
  },
  {
    id: 'forward-oversize-upstream-reply',
    reason:
      "An upstream that ignores the advertised buffer and sends a UDP reply larger than it: CoreDNS reads into a buffer of the client's size and answers an empty TC reply; clusterdns reads the whole datagram and fits it to the client itself (whole records, TC when some are left out). Only a non-compliant upstream shows this (the suite's scripted one does on purpose).",
    match: {
      kinds: ['answer', 'truncated', 'size', 'flags', 'order'],
      plugins: ['forward'],
      proto: 'udp',
      tags: ['oversize-upstream'],
    },
  },
  {
    id: 'formerr-for-malformed-queries',
    reason:
      "A query whose header counts do not match its records (a record missing, two OPT records, an OPT owned by another name than the root, a question cut short) gets FORMERR from clusterdns, as the project's bad-input rule says; miekg/dns skips what it cannot read and CoreDNS answers what is left (NOERROR, REFUSED or SERVFAIL).",
    match: { kinds: ['rcode', 'flags', 'question', 'answer', 'edns'], tags: ['malformed'], candidateRcode: 'FORMERR' },
  },
  {
    id: 'template-ederror-do-bit',
    reason:
      "A template with `ederror` adds its OPT the way CoreDNS does (miekg/dns SetEdns0(4096, true)), which sets DO in the reply even when the client's query had DO=0. clusterdns's reply pipeline echoes the client's DO bit, as RFC 3225 asks of a reply.",
    match: { kinds: ['edns'], fields: ['do'], plugins: ['template'], tags: ['template-ederror'] },
  },
];
