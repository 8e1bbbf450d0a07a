/**
 * Capabilities: how one plugin offers something to another without either importing the other's
 * folder (docs/ARCHITECTURE.md, "Capabilities").
 *
 * A capability is a typed key declared in `src/` next to the interface it carries. The offering
 * plugin calls `ctx.provide(KEY, value)` during its setup; a consumer calls `ctx.lookup(KEY)` once
 * every setup of the server block has run — inside its HandlerFactory, an `onStartup` hook or later,
 * never during its own setup (the fixed plugin order would make that depend on which of the two
 * comes first). Capabilities are scoped to one server block, as CoreDNS's `dnsserver.GetConfig(c)
 * .Handler(name)` is: k8s_external and autopath see the kubernetes plugin of their own block only.
 */

/** A typed capability key. `T` is the interface the offering plugin hands out. */
export interface Capability<T> {
  /** Unique name, `plugin.what` (for error messages and debugging). */
  readonly name: string;
  /** Phantom field that carries `T` (never set). */
  readonly __type?: (value: T) => T;
}

/** Declare a capability key. Declare each once, in `src/`, beside the interface it carries. */
export function capability<T>(name: string): Capability<T> {
  return Object.freeze({ name });
}

/** The capabilities offered in one server block. */
export class CapabilitySet {
  private readonly values = new Map<Capability<unknown>, unknown>();
  private sealed = false;

  provide<T>(cap: Capability<T>, value: T): void {
    if (this.sealed) throw new Error(`capability ${cap.name} offered after setup`);
    if (this.values.has(cap as Capability<unknown>))
      throw new Error(`capability ${cap.name} offered twice in one server block`);
    this.values.set(cap as Capability<unknown>, value);
  }

  /** The offered value, or undefined when no plugin of the block offers it. */
  lookup<T>(cap: Capability<T>): T | undefined {
    if (!this.sealed)
      throw new Error(
        `capability ${cap.name} looked up during setup; look it up in the handler factory or a startup hook`,
      );
    return this.values.get(cap as Capability<unknown>) as T | undefined;
  }

  /** Called by the core once every setup of the block ran. */
  seal(): void {
    this.sealed = true;
  }
}
