/**
 * One secondary zone (docs/plugins.md, secondary): the data pulled from its primaries and, in the
 * thread that pulls, the loop that keeps it current, as CoreDNS 1.15.0's
 * `transferAndUpdate` and `Zone.UpdateWithTransfer` (plugin/secondary/setup.go,
 * plugin/file/secondary.go) do:
 *
 * - until the first transfer succeeds, every primary is tried in order, again after 250 ms,
 *   doubling to at most 10 s (`All 'ZONE' masters failed to transfer, retrying in …`);
 * - then three timers from the SOA: every `refresh` (after a random 0–5 s) the primaries' SOA
 *   serial is asked over TCP and the zone transferred when it is higher (RFC 1982); a failed check
 *   or transfer starts `retry` (0–2 s jitter), and while retrying an `expire` tick marks the zone
 *   expired (queries get SERVFAIL) until a transfer succeeds;
 * - a NOTIFY from a primary (the handler checks the address) runs the same serial check at once.
 *
 * With query threads (docs/multicore.md) only the main thread pulls: it sends each transferred
 * zone (its AXFR messages) and each expiry to the threads' copies over a replication channel
 * (feed.ts), and a thread that receives a NOTIFY passes it to the main thread. One pull per pod.
 */
import { axfrIn, soaSerialOf, XfrError } from '../../src/dns/axfr.js';
import { answerRecords } from '../../src/dns/wirerecords.js';
import type { ZoneRecord } from '../../src/dns/zonefile/record.js';
import type { Logger } from '../../src/log.js';
import type { IndexReplication, Offer } from '../../src/server/replication.js';
import type { TransferHub } from '../../src/transfer.js';
import { formatGoDuration } from '../../src/util/duration.js';
import { ZoneData } from '../../src/zone/zone.js';
import { zoneFeedChannel, type ZoneAsk, type ZoneFeed } from './feed.js';

/** CoreDNS's first retry delay and its cap while no transfer has succeeded. */
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 10_000;
/** Random delay before a refresh and a retry check (file/secondary.go's jitter). */
const REFRESH_JITTER_MS = 5000;
const RETRY_JITTER_MS = 2000;
/** RFC 1982: the largest serial increment. */
const MAX_SERIAL_INCREMENT = 2147483647;

/** RFC 1982 serial arithmetic: is `a` older than `b` (CoreDNS's `less`)? */
export function serialLess(a: number, b: number): boolean {
  if (a < b) return b - a <= MAX_SERIAL_INCREMENT;
  return a - b > MAX_SERIAL_INCREMENT;
}

/** The SOA timers (seconds) of a zone's data, each at least 1 (CoreDNS's `max(x, 1)`). */
function soaTimers(data: ZoneData): { refresh: number; retry: number; expire: number } {
  const soa = (data.soa?.answer as { data?: { refresh?: number; retry?: number; expire?: number } } | undefined)?.data;
  return {
    refresh: Math.max(soa?.refresh ?? 1, 1),
    retry: Math.max(soa?.retry ?? 1, 1),
    expire: Math.max(soa?.expire ?? 1, 1),
  };
}

/** A zone built from transferred records; throws on a record a zone refuses (NSEC3). */
export function zoneFromRecords(origin: string, records: Iterable<ZoneRecord>): ZoneData {
  const z = new ZoneData(origin);
  for (const r of records) z.insert(r);
  z.seal();
  return z;
}

export interface ZoneLogs {
  /** `plugin/secondary` (the first transfer's retries). */
  readonly secondary: Logger;
  /** `plugin/file` (transfers, checks and NOTIFY: CoreDNS logs them from the file package). */
  readonly file: Logger;
}

/** Timing knobs, for tests: CoreDNS's values unless given. */
export interface ZoneTiming {
  readonly firstRetryMs?: number;
  readonly refreshJitterMs?: number;
  readonly retryJitterMs?: number;
  /** Dial and per-message timeout of transfers and serial checks (miekg's 2 s). */
  readonly timeoutMs?: number;
}

/**
 * Checks the records of every transfer of the zone before it goes live (CoreDNS's
 * `TransferInWithRecords` validate: a catalog zone is parsed, catalog.ts) and returns what to do
 * once it is live (the catalog's members added and removed, consumer.ts). A throw fails the
 * transfer, the zone stays as it was. A query thread's copy runs it on each zone it receives.
 */
export type TransferCheck = (records: readonly ZoneRecord[]) => () => void;

export class SecondaryZone {
  /** The served data; without an SOA (nothing transferred yet) every lookup is SERVFAIL. */
  data: ZoneData;
  expired = false;
  /** The transfer plugins of the instances serving this zone: told (NOTIFY) after each transfer. */
  readonly hubs = new Set<TransferHub>();
  private readonly stop = new AbortController();
  private started = false;
  private timers: NodeJS.Timeout[] = [];
  private retryActive = false;
  /** A refresh, retry or NOTIFY check is running: ticks meanwhile are dropped, NOTIFYs wait. */
  private busy: Promise<void> | null = null;
  private offer: Offer<ZoneFeed> | null = null;
  private unsubscribe: (() => void) | null = null;
  /** The last transfer's messages, kept only to give a thread that subscribes later its snapshot. */
  private messages: readonly Buffer[] = [];
  private readonly channel;
  /** Took over another zone's data (a catalog member changing owner): transfer once anyway. */
  private adopted = false;
  /** Set for a catalog zone (consumer.ts). */
  check: TransferCheck | null = null;

  constructor(
    readonly origin: string,
    readonly from: readonly string[],
    readonly key: string,
    private readonly logs: ZoneLogs,
    private readonly replication: IndexReplication | undefined,
    private readonly timing: ZoneTiming = {},
  ) {
    this.data = new ZoneData(origin);
    this.channel = zoneFeedChannel(key);
  }

  /** This thread pulls the zone (the main thread, or the only one). */
  get pulls(): boolean {
    return this.replication?.role !== 'replica';
  }

  /** Start pulling (or following the main thread's pulls); idempotent. */
  start(): void {
    if (this.started) return;
    this.started = true;
    const r = this.replication;
    if (r?.role === 'replica') {
      this.unsubscribe = r.subscribe(this.channel, (m) => this.apply(m));
      return;
    }
    if (r?.role === 'source') {
      this.offer = r.offer(
        this.channel,
        () => this.snapshot(),
        (ask: ZoneAsk) => this.notified(ask.from),
      );
    }
    void this.firstTransfer();
  }

  /**
   * Serve `other`'s data until this zone's own first transfer (CoreDNS's preserveDynamicZoneState,
   * a catalog member kept across an ownership migration). Before start().
   */
  adopt(other: SecondaryZone): void {
    this.data = other.data;
    this.expired = other.expired;
    this.messages = other.messages;
    this.adopted = true;
  }

  /** Stop pulling: timers cleared, a transfer in flight aborted. */
  close(): void {
    this.stop.abort();
    this.clearTimers();
    this.offer?.withdraw();
    this.unsubscribe?.();
  }

  /**
   * A NOTIFY from an allowed primary (already answered by the handler, which logged
   * `checking transfer`): check the serial and transfer when it increased. In a query thread, the
   * main thread does it.
   */
  notify(from: string): void {
    const r = this.replication;
    if (r?.role === 'replica') {
      r.ask(this.channel, { op: 'notify', from });
      return;
    }
    this.notified(from);
  }

  private notified(from: string): void {
    void this.exclusive(async () => {
      const log = this.logs.file;
      const { ok, err } = await this.shouldTransfer();
      if (ok) {
        const e = await this.transferIn();
        if (e !== null) log.warning(`Notify from ${from} for ${this.origin}: transfer failed: ${e.message}`);
      } else log.info(`Notify from ${from} for ${this.origin}: no SOA serial increase seen`);
      if (err !== null) log.warning(`Notify from ${from} for ${this.origin}: failed primary check: ${err.message}`);
    }, true);
  }

  // ---- The main thread's pulls ------------------------------------------------------------------

  private get stopped(): boolean {
    return this.stop.signal.aborted;
  }

  /** Resolves true when stopped during the wait. */
  private sleep(ms: number): Promise<boolean> {
    if (this.stopped) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        this.stop.signal.removeEventListener('abort', done);
        resolve(this.stopped);
      };
      const t = setTimeout(done, ms);
      t.unref();
      this.stop.signal.addEventListener('abort', done);
    });
  }

  /** Run `fn` when no other check runs; `wait`: queue behind one that does (else skip). */
  private async exclusive(fn: () => Promise<void>, wait: boolean): Promise<void> {
    while (this.busy !== null) {
      if (!wait) return;
      await this.busy;
    }
    if (this.stopped) return;
    const run = fn().finally(() => {
      this.busy = null;
    });
    this.busy = run;
    await run;
  }

  /** transferAndUpdate: retry the first transfer with a doubling delay, then keep the zone current. */
  private async firstTransfer(): Promise<void> {
    let dur = this.timing.firstRetryMs ?? FIRST_RETRY_MS;
    for (;;) {
      let err: Error | null = null;
      await this.exclusive(async () => {
        // A NOTIFY may have brought the zone meanwhile.
        err = this.data.soa === null || this.adopted ? await this.transferIn() : null;
      }, true);
      if (this.stopped) return;
      if (err === null) break;
      this.logs.secondary.warning(
        `All '${this.origin}' masters failed to transfer, retrying in ${formatGoDuration(dur)}: ${(err as Error).message}`,
      );
      if (await this.sleep(dur)) return;
      dur = Math.min(dur * 2, MAX_RETRY_MS);
    }
    this.restart();
  }

  private clearTimers(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  /** UpdateWithTransfer's `Restart`: the three tickers from the current SOA. */
  private restart(): void {
    this.clearTimers();
    if (this.stopped) return;
    const { refresh, retry, expire } = soaTimers(this.data);
    const every = (s: number, fn: () => void): void => {
      const t = setInterval(fn, s * 1000);
      t.unref();
      this.timers.push(t);
    };
    every(refresh, () => void this.exclusive(() => this.tick('refresh'), false));
    every(retry, () => {
      if (this.retryActive) void this.exclusive(() => this.tick('retry'), false);
    });
    every(expire, () => {
      if (this.retryActive && !this.expired) this.setExpired();
    });
  }

  private async tick(kind: 'refresh' | 'retry'): Promise<void> {
    const jitter =
      kind === 'refresh'
        ? (this.timing.refreshJitterMs ?? REFRESH_JITTER_MS)
        : (this.timing.retryJitterMs ?? RETRY_JITTER_MS);
    if (await this.sleep(Math.floor(Math.random() * jitter))) return;
    const { ok, err } = await this.shouldTransfer();
    if (err !== null) {
      this.logs.file.warning(`Failed ${kind} check ${err.message}`);
      if (kind === 'refresh') this.retryActive = true;
      return;
    }
    if (ok && (await this.transferIn()) !== null) {
      this.retryActive = true;
      return;
    }
    this.retryActive = false;
    this.restart();
  }

  /**
   * shouldTransfer: the first primary that answers NOERROR with an SOA gives the serial; true when
   * it is newer than ours (or we have none). `err` is the last primary's failure.
   */
  private async shouldTransfer(): Promise<{ ok: boolean; err: Error | null }> {
    let err: Error | null = null;
    let serial: number | null = null;
    for (const to of this.from) {
      err = null;
      try {
        serial = await soaSerialOf(this.origin, to, this.xfrOptions());
      } catch (e) {
        err = e as Error;
        continue;
      }
      if (serial !== null) break;
    }
    if (serial === null) return { ok: false, err };
    const soa = this.data.soa;
    if (soa === null) return { ok: true, err };
    return { ok: serialLess(soa.serial ?? 0, serial), err };
  }

  private xfrOptions(): { timeoutMs?: number; signal: AbortSignal } {
    const t = this.timing.timeoutMs;
    return t !== undefined ? { timeoutMs: t, signal: this.stop.signal } : { signal: this.stop.signal };
  }

  /** TransferIn: the primaries in order until one gives the whole zone; null, or the last error. */
  async transferIn(): Promise<Error | null> {
    const log = this.logs.file;
    let err: Error | null = null;
    for (const to of this.from) {
      let got;
      try {
        got = await axfrIn(this.origin, to, this.xfrOptions());
      } catch (e) {
        err = e as Error;
        if (this.stopped) return err;
        if (e instanceof XfrError && e.setup)
          log.error(`Failed to setup transfer \`${this.origin}' with \`${JSON.stringify(to)}': ${err.message}`);
        else log.error(`Failed to transfer \`${this.origin}' from ${JSON.stringify(to)}: ${err.message}`);
        continue;
      }
      let data: ZoneData;
      try {
        data = zoneFromRecords(this.origin, got.records);
      } catch (e) {
        err = e as Error;
        log.error(`Failed to parse transfer \`${this.origin}' from: ${JSON.stringify(to)}: ${err.message}`);
        continue;
      }
      // CoreDNS validates the first whole transfer only: a rejected catalog fails it, unlogged.
      let after: (() => void) | null = null;
      if (this.check !== null) {
        try {
          after = this.check(got.records);
        } catch (e) {
          return e as Error;
        }
      }
      this.adopted = false;
      this.setData(data, got.messages);
      log.info(`Transferred: ${this.origin} from ${to}`);
      for (const hub of this.hubs) {
        const e = await hub.notify(this.origin);
        if (e !== null) log.warning(`Failed sending notifies: ${e.message}`);
      }
      after?.();
      return null;
    }
    return err;
  }

  private setData(data: ZoneData, messages: readonly Buffer[]): void {
    this.data = data;
    this.expired = false;
    if (this.offer !== null) {
      this.messages = messages;
      this.offer.publish({ op: 'zone', messages });
    }
  }

  private setExpired(): void {
    this.expired = true;
    this.offer?.publish({ op: 'expired' });
  }

  /** What a thread that subscribes now needs: the zone as it is. */
  private snapshot(): ZoneFeed[] {
    const out: ZoneFeed[] = [];
    if (this.messages.length > 0) out.push({ op: 'zone', messages: this.messages });
    if (this.expired) out.push({ op: 'expired' });
    return out;
  }

  // ---- A query thread's copy --------------------------------------------------------------------

  private apply(m: ZoneFeed): void {
    if (m.op === 'expired') {
      this.expired = true;
      return;
    }
    const records: ZoneRecord[] = [];
    for (const msg of m.messages) {
      const b = Buffer.from(msg.buffer, msg.byteOffset, msg.byteLength);
      for (const r of answerRecords(b, 'stdin')) records.push(r);
    }
    this.data = zoneFromRecords(this.origin, records);
    this.expired = false;
    // The main thread took this catalog (it publishes only what passed): the same members here.
    if (this.check !== null) {
      try {
        this.check(records)();
      } catch {
        // Not reached: the main thread's check passed on the same records.
      }
    }
  }
}
