/**
 * Connection admission for the stream listeners (plain TCP and DoT in src/server/tcp.ts, DoH in
 * src/server/doh.ts): one rule for both (docs/operations.md, TCP limits).
 *
 * - A source (the socket's peer address) at its cap (`maxConnectionsPerSource`) is refused: the
 *   new connection is closed at once, so one client cannot take every slot.
 * - At the listener's cap (`maxConnections`) the connection idle the longest is closed to make
 *   room: a new client is always served, an idle one pays.
 * - Connections are kept in the order of their last activity (`touch`), which is what eviction
 *   and the idle sweep walk; the sweep's timer runs only while there are connections.
 */
export class ConnectionAdmission<C> {
  /** Admitted connections, the one idle the longest first (roughly: `touch` moves to the end). */
  private readonly order = new Set<C>();
  private readonly perSource = new Map<string, number>();
  private sweeper: NodeJS.Timeout | null = null;
  /** Connections closed to make room under the listener's cap. */
  evicted = 0;
  /** Connections refused because their source was at its cap. */
  refused = 0;

  constructor(
    /** The source a connection was admitted for (its per-source count). */
    private readonly sourceOf: (c: C) => string,
    /** Close a connection (evicted); it is forgotten here whether or not the close reports back. */
    private readonly close: (c: C) => void,
    /** The idle sweep, run every `tickMs` of `add` while connections are open. */
    private readonly sweep: () => void,
  ) {}

  get size(): number {
    return this.order.size;
  }

  countFrom(source: string): number {
    return this.perSource.get(source) ?? 0;
  }

  /**
   * May a connection from `source` come in? False (counted as refused) when the source is at its
   * cap (0: none); otherwise room is made under `maxConnections` and the source's slot is taken:
   * follow with `add`.
   */
  admit(source: string, maxConnectionsPerSource: number, maxConnections: number): boolean {
    const n = this.perSource.get(source) ?? 0;
    if (maxConnectionsPerSource > 0 && n >= maxConnectionsPerSource) {
      this.refused++;
      return false;
    }
    while (this.order.size >= maxConnections) {
      const oldest = this.order.values().next().value;
      if (oldest === undefined) break;
      this.evicted++;
      this.close(oldest);
      this.remove(oldest);
    }
    this.perSource.set(source, n + 1);
    return true;
  }

  /** Keep an admitted connection; the sweep runs every `tickMs` from the first one on. */
  add(c: C, tickMs: number): void {
    this.order.add(c);
    if (this.sweeper === null) {
      this.sweeper = setInterval(this.sweep, tickMs);
      this.sweeper.unref();
    }
  }

  /** A connection closed: forget it (false when it was already forgotten). */
  remove(c: C): boolean {
    if (!this.order.delete(c)) return false;
    const source = this.sourceOf(c);
    const n = (this.perSource.get(source) ?? 1) - 1;
    if (n <= 0) this.perSource.delete(source);
    else this.perSource.set(source, n);
    if (this.order.size === 0 && this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
    return true;
  }

  /** Move a connection to the end of the idle order (a closed one stays forgotten). */
  touch(c: C): void {
    if (this.order.delete(c)) this.order.add(c);
  }

  /** Stop the sweep's timer (the listener closes). */
  stop(): void {
    if (this.sweeper !== null) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  /** The connections, the one idle the longest first. */
  values(): IterableIterator<C> {
    return this.order.values();
  }
}
