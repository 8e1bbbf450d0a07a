/**
 * Zone transfers out (CoreDNS's plugin/transfer `Transferer`): the contract between the `transfer`
 * plugin, which answers AXFR/IXFR and sends NOTIFY, and the plugins that hold zones (`file`,
 * `kubernetes`, `auto`, `secondary`). Neither side imports the other's folder: the transfer
 * plugin offers a {@link TransferHub} under {@link TRANSFER}; a zone-holding plugin looks it up in a
 * startup hook, adds itself as a {@link TransferSource}, and calls `notify` when a zone changed.
 * Without `transfer` in the block the lookup finds nothing and the zone plugin does nothing more,
 * as CoreDNS's file does when `dnsserver.GetConfig(c).Handler("transfer")` is nil.
 */
import type { Answer } from 'dns-packet';
import { capability } from './capabilities.js';
import { WireRecordBatch } from './dns/recordbatch.js';

/**
 * One batch of a transfer's records: record objects, or records a source wrote in wire form
 * itself (src/dns/recordbatch.ts; the kubernetes zone, whose ~46,000 records at 10,000 Services
 * cost garbage enough as objects to slow other queries). A wire batch is the source's to reuse
 * once the transfer pulls the next one. An empty batch asks the transfer plugin for a turn of the
 * event loop (the source is in a long stretch of work of its own).
 */
export type TransferBatch = readonly Answer[] | WireRecordBatch;

/**
 * The records of one transfer, in batches, produced lazily: the first record is the zone's SOA and
 * the last is the SOA again (AXFR, RFC 5936), or the only record is the SOA (IXFR from a serial
 * that is current); both SOAs come as record objects. The transfer plugin pulls a batch, packs it
 * into messages of at most 63,000 record bytes and sends them before pulling the next, so a source
 * that generates its batches as it goes (a generator over its index) keeps the whole transfer in
 * bounded memory.
 */
export type TransferRecords = Iterable<TransferBatch>;

/** A batch's records as objects (tests, and readers that want objects). */
export function batchAnswers(batch: TransferBatch): Answer[] {
  return batch instanceof WireRecordBatch ? batch.answers() : [...batch];
}

/** The records of a transfer as objects, batch by batch, each read before the next is pulled. */
export function* transferAnswers(records: TransferRecords): Generator<Answer[]> {
  for (const batch of records) yield batchAnswers(batch);
}

export interface TransferSource {
  /** The plugin's name (for errors and logs). */
  readonly plugin: string;
  /**
   * The records of `zone` (lower-case, absolute) for a transfer: `serial` 0 asks for the whole
   * zone (AXFR); another serial asks for the changes since it (IXFR), which a source without
   * history answers with the SOA alone when `serial` is the current one and with the whole zone
   * otherwise. Null when the plugin is not authoritative for exactly this zone (the transfer plugin
   * then asks the next source, as CoreDNS's `ErrNotAuthoritative`).
   */
  transfer(zone: string, serial: number): TransferRecords | null;
}

export interface TransferHub {
  /** Add a zone source; call from an `onStartup` hook. Sources are asked in the order added. */
  addSource(source: TransferSource): void;
  /**
   * The zone changed (or was loaded): send NOTIFY to the `to` addresses of the transfer stanza
   * that covers it (not to `*`). Resolves when every secondary answered or gave up, with null or
   * with an error naming each secondary that did not accept (the caller decides whether to log
   * it, as CoreDNS's file logs it after a reload and not at start); never rejects.
   */
  notify(zone: string): Promise<Error | null>;
}

export const TRANSFER = capability<TransferHub>('transfer.hub');
