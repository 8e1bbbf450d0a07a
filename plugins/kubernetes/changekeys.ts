/**
 * The change keys of the Kubernetes index, written in this module only. A change key names one
 * piece of the index an answer can depend on; the store reports the keys every change touches, the
 * answer cache drops the answers computed from them (resolve.ts records them while an answer is
 * computed), and the shared-memory copy for the query threads (sharedindex.ts) keeps one table
 * entry per key and sends the keys on to the threads' answer caches.
 *
 * Producer and consumers once spelled the keys as template strings of their own (`ip:` in one
 * file, `i:` in another): a typo compiled and silently stopped invalidation. A {@link ChangeKey} is
 * a branded string that only the constructors of {@link changeKey} make, so a wrong key does not
 * compile, and it stays a plain string at run time (answer-cache lookups by key cost what they did).
 *
 * | kind        | id                          | what it names                                   |
 * |-------------|-----------------------------|-------------------------------------------------|
 * | `service`   | `name.namespace`            | a Service                                       |
 * | `slices`    | `name.namespace`            | the EndpointSlices of a Service                 |
 * | `namespace` | namespace name              | a Namespace                                     |
 * | `address`   | IP                          | services with it as cluster IP, slices holding it |
 * | `pod`       | IP                          | pods with it among their IPs                    |
 * | `external`  | IP or hostname              | services with it among their external addresses (k8s_external) |
 * | `import`    | `name.namespace`            | a ServiceImport (`multicluster`)                |
 * | `mcslices`  | `name.namespace`            | the multicluster EndpointSlices of a ServiceImport |
 */

declare const changeKeyBrand: unique symbol;

/** One change key (see the module comment); made only by {@link changeKey} or {@link parseChangeKey}. */
export type ChangeKey = string & { readonly [changeKeyBrand]: true };

/** The change keys one change touched (a store notification, one update sent to the threads). */
export type ChangeSet = ReadonlySet<ChangeKey>;

/** Told the change keys of every change of an index. */
export type ChangeListener = (keys: ChangeSet) => void;

/** The prefix of each kind: the key's text is `<prefix>:<id>`. */
const PREFIX = {
  service: 's',
  slices: 'e',
  namespace: 'n',
  address: 'a',
  pod: 'p',
  external: 'x',
  import: 'i',
  mcslices: 'm',
} as const;

export type ChangeKind = keyof typeof PREFIX;

const KIND_OF_PREFIX: ReadonlyMap<string, ChangeKind> = new Map(
  Object.entries(PREFIX).map(([kind, prefix]) => [prefix, kind as ChangeKind]),
);

const make = (prefix: string, id: string): ChangeKey => `${prefix}:${id}` as ChangeKey;

/** The constructors: the only way to name a piece of the index. */
export const changeKey = {
  /** The Service with service key `svc` (`name.namespace`, store.ts serviceKey). */
  service: (svc: string): ChangeKey => make(PREFIX.service, svc),
  /** The EndpointSlices of the Service with service key `svc`. */
  slices: (svc: string): ChangeKey => make(PREFIX.slices, svc),
  namespace: (ns: string): ChangeKey => make(PREFIX.namespace, ns),
  /** Services with cluster IP `ip` and slices holding `ip` as a ready address. */
  address: (ip: string): ChangeKey => make(PREFIX.address, ip),
  /** Pods with `ip` among their IPs. */
  pod: (ip: string): ChangeKey => make(PREFIX.pod, ip),
  /** Services with `address` among their external addresses. */
  external: (address: string): ChangeKey => make(PREFIX.external, address),
  /** The ServiceImport with key `imp` (`name.namespace`). */
  import: (imp: string): ChangeKey => make(PREFIX.import, imp),
  /** The multicluster EndpointSlices of the ServiceImport with key `imp`. */
  mcslices: (imp: string): ChangeKey => make(PREFIX.mcslices, imp),
} as const satisfies Record<ChangeKind, (id: string) => ChangeKey>;

/** What a change key names. */
export interface ParsedChangeKey {
  readonly kind: ChangeKind;
  readonly id: string;
}

/** The kind and id of a key. */
export function changeKeyParts(key: ChangeKey): ParsedChangeKey {
  const colon = key.indexOf(':');
  // Every ChangeKey was made by `make` (or checked by parseChangeKey): the prefix is known.
  return { kind: KIND_OF_PREFIX.get(key.slice(0, colon))!, id: key.slice(colon + 1) };
}

/** A change key received as text (from the main thread), or null when it is not one. */
export function parseChangeKey(text: unknown): ChangeKey | null {
  if (typeof text !== 'string') return null;
  const colon = text.indexOf(':');
  if (colon < 0 || !KIND_OF_PREFIX.has(text.slice(0, colon))) return null;
  return text as ChangeKey;
}

/** "Everything may have changed" (a thread handed a whole new index): drop every answer. */
export const EVERYTHING: ChangeSet = new Set<ChangeKey>([make('*', '')]);
