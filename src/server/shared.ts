/**
 * Resources that outlive one configuration instance (watch indexes, HTTP side servers), keyed by
 * what they depend on. A reload that asks for the same key reuses the value; keys no instance asks
 * for any more are disposed after the switch.
 */
interface Entry {
  value: unknown;
  dispose: ((value: unknown) => void | Promise<void>) | undefined;
  owners: Set<number>;
}

export class SharedResources {
  private readonly entries = new Map<string, Entry>();

  get<T>(owner: number, key: string, create: () => T, dispose?: (value: T) => void | Promise<void>): T {
    let e = this.entries.get(key);
    if (!e) {
      e = {
        value: create(),
        dispose: dispose as ((v: unknown) => void | Promise<void>) | undefined,
        owners: new Set(),
      };
      this.entries.set(key, e);
    }
    e.owners.add(owner);
    return e.value as T;
  }

  /** The value kept under `key`, or undefined (for tests and debugging). */
  peek(key: string): unknown {
    return this.entries.get(key)?.value;
  }

  /** Number of values kept. */
  get size(): number {
    return this.entries.size;
  }

  /** Forget `owner`; dispose what no remaining owner uses. */
  async release(owner: number): Promise<void> {
    const tasks: Promise<void>[] = [];
    for (const [key, e] of this.entries) {
      if (!e.owners.delete(owner) || e.owners.size > 0) continue;
      this.entries.delete(key);
      if (e.dispose) tasks.push(Promise.resolve().then(() => e.dispose!(e.value)));
    }
    await Promise.allSettled(tasks);
  }
}
