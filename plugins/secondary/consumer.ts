/**
 * The catalog zones of one *secondary* instance (RFC 9432, CoreDNS 1.15.0
 * plugin/secondary/catalog.go): after each transfer of a catalog zone its members (catalog.ts) are
 * added to and removed from the zones the instance serves, each pulled from the catalog's
 * primaries with the same timers and NOTIFY as a configured zone (zone.ts).
 *
 * As CoreDNS's applyCatalog: a member outside the catalog's MEMBER-ZONES is skipped (counted in one
 * warning); a member that is already a configured zone, or a member of another catalog, is skipped
 * ("zone already exists") unless that other catalog's entry for it has a `coo` property naming this
 * catalog: then it migrates here, keeping its data only when the old and new member node labels are
 * the same (else it starts empty and is transferred). A member whose node label changed within the
 * same catalog is reset (transferred again from empty). Every member is transferred once when it
 * is (re)added.
 *
 * With query threads the consumer runs in every thread: the main thread's catalog zone checks and
 * pulls, a thread's copy applies the same catalog when it receives it, and each member's copy
 * follows the main thread's pulls of that member (its channel key names the zone, its primaries,
 * its catalog and its node label, so a reset or a migration is a new channel). Only the main
 * thread logs.
 */
import type { Logger } from '../../src/log.js';
import { isSubdomain } from '../../src/dns/name.js';
import type { TransferHub } from '../../src/transfer.js';
import { parseCatalog, type Catalog, type CatalogMember } from './catalog.js';
import type { SecondaryZone } from './zone.js';

/** The zones an instance serves: the configured ones and the catalogs' members (handler.ts). */
export interface ZoneSet {
  /** Origins in the order they were added (a removed member leaves it). */
  readonly names: string[];
  readonly zones: Map<string, SecondaryZone>;
}

/** A member zone added by a catalog. */
interface Dynamic {
  readonly catalog: string;
  readonly memberId: string;
  readonly zone: SecondaryZone;
}

/** Makes a member zone (not started) pulling `origin` from `from` over the channel `key`. */
export type MakeZone = (origin: string, from: readonly string[], key: string) => SecondaryZone;

export class CatalogConsumer {
  private readonly dynamic = new Map<string, Dynamic>();
  /** The last catalog taken from each catalog zone. */
  private readonly catalogs = new Map<string, Catalog>();
  /** The members each catalog added (accepted ones, including those skipped as clashes). */
  private readonly memberZones = new Map<string, Set<string>>();
  /** The block's *transfer* plugin: member zones notify its secondaries too. */
  hub: TransferHub | null = null;
  private closed = false;

  constructor(
    private readonly set: ZoneSet,
    /** MEMBER-ZONES of each catalog zone (empty: every member). */
    private readonly allowed: ReadonlyMap<string, readonly string[]>,
    private readonly log: Logger,
    private readonly make: MakeZone,
    /** This thread pulls (the main thread, or the only one): it logs. */
    private readonly pulls: boolean,
  ) {}

  /** Make `z` (a zone named in `allowed`) a catalog: each transfer of it is checked and applied. */
  attach(z: SecondaryZone): void {
    const origin = z.origin;
    z.check = (records) => {
      const cat = parseCatalog(origin, records);
      return () => {
        if (this.closed) return;
        this.catalogs.set(origin, cat);
        this.apply(origin, cat, z);
        if (this.pulls) this.log.info(`Parsed catalog zone ${origin} with ${cat.members.length} member zones`);
      };
    };
  }

  /** Stop every member zone (the instance is replaced or the process stops). */
  close(): void {
    this.closed = true;
    for (const d of this.dynamic.values()) d.zone.close();
    this.dynamic.clear();
  }

  private memberAllowed(origin: string, zone: string): boolean {
    const zones = this.allowed.get(origin);
    return zones !== undefined && (zones.length === 0 || zones.some((z) => isSubdomain(zone, z)));
  }

  private info(msg: string): void {
    if (this.pulls) this.log.info(msg);
  }

  private warning(msg: string): void {
    if (this.pulls) this.log.warning(msg);
  }

  private apply(origin: string, cat: Catalog, catalogZone: SecondaryZone): void {
    const accepted = new Set<string>();
    const starts: SecondaryZone[] = [];
    let rejected = 0;
    for (const member of cat.members) {
      if (!this.memberAllowed(origin, member.zone)) {
        rejected++;
        continue;
      }
      accepted.add(member.zone);
      const existing = this.set.zones.get(member.zone);
      if (existing === undefined) {
        starts.push(this.replace(member, origin, catalogZone, null));
        this.info(`Added catalog member zone ${member.zone} from catalog ${origin}`);
        continue;
      }
      const dyn = this.dynamic.get(member.zone);
      if (dyn === undefined) {
        this.warning(`Skipping catalog member zone ${member.zone} from ${origin}: zone already exists`);
        continue;
      }
      if (dyn.catalog === origin) {
        if (dyn.memberId === member.id) continue;
        starts.push(this.replace(member, origin, catalogZone, null));
        this.info(
          `Reset catalog member zone ${member.zone} from ${origin} after member ID changed from ${dyn.memberId} to ${member.id}`,
        );
        continue;
      }
      const source = this.catalogs.get(dyn.catalog)?.members.find((m) => m.zone === member.zone);
      if (source === undefined || source.changeOfOwnership !== origin) {
        this.warning(`Skipping catalog member zone ${member.zone} from ${origin}: zone already exists`);
        continue;
      }
      // Kept only when the running zone, the old catalog's entry and the new one are one member.
      const preserved = dyn.memberId === source.id && source.id === member.id;
      starts.push(this.replace(member, origin, catalogZone, preserved ? dyn.zone : null));
      if (preserved)
        this.info(
          `Migrated catalog member zone ${member.zone} from catalog ${dyn.catalog} to ${origin}, preserving state for member ID ${source.id}`,
        );
      else
        this.info(
          `Migrated catalog member zone ${member.zone} from catalog ${dyn.catalog} to ${origin} with state reset after member identity changed from ${source.id} to ${member.id}`,
        );
    }
    for (const zone of this.memberZones.get(origin) ?? []) {
      if (accepted.has(zone)) continue;
      if (this.remove(zone, origin)) this.info(`Removed catalog member zone ${zone} from catalog ${origin}`);
    }
    this.memberZones.set(origin, accepted);
    if (rejected > 0)
      this.warning(`Skipped ${rejected} member zones from catalog ${origin}: outside configured member zones`);
    for (const z of starts) {
      if (this.hub !== null && z.pulls) z.hubs.add(this.hub);
      z.start();
    }
  }

  /** A new zone for `member` in place of any running one (CoreDNS's replaceDynamicZoneLocked). */
  private replace(
    member: CatalogMember,
    origin: string,
    catalogZone: SecondaryZone,
    preserveFrom: SecondaryZone | null,
  ): SecondaryZone {
    const key = `secondary:catalog:${JSON.stringify([member.zone, catalogZone.from, origin, member.id])}`;
    const z = this.make(member.zone, catalogZone.from, key);
    if (preserveFrom !== null) z.adopt(preserveFrom);
    this.dynamic.get(member.zone)?.zone.close();
    if (!this.set.zones.has(member.zone)) this.set.names.push(member.zone);
    this.set.zones.set(member.zone, z);
    this.dynamic.set(member.zone, { catalog: origin, memberId: member.id, zone: z });
    return z;
  }

  /** Remove `zone` when `catalog` owns it (CoreDNS's removeDynamicZoneLocked). */
  private remove(zone: string, catalog: string): boolean {
    const dyn = this.dynamic.get(zone);
    if (dyn === undefined || dyn.catalog !== catalog) return false;
    dyn.zone.close();
    this.dynamic.delete(zone);
    this.set.zones.delete(zone);
    const i = this.set.names.indexOf(zone);
    if (i >= 0) this.set.names.splice(i, 1);
    return true;
  }
}
