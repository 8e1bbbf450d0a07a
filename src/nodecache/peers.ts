/**
 * Which node-cache instances serve the same local IPs and port on this node (docs/node-cache.md,
 * "Upgrades without a gap"). Each instance listens on an abstract Unix socket named after them;
 * abstract sockets belong to the network namespace (the node's, for hostNetwork pods), vanish with
 * their process however it ends, and are listed in /proc/net/unix: no shared directory, no stale
 * lock. An exiting instance that sees another one hands the port over and leaves the rules and
 * the interface in place.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { randomBytes } from 'node:crypto';

const PREFIX = 'clusterdns-node-cache';

export class Peers {
  private server: Server | null = null;
  readonly key: string;
  private readonly own: string;

  constructor(localIPs: readonly string[], port: number) {
    this.key = `${PREFIX}/${[...localIPs].sort().join(',')}:${port}/`;
    this.own = `${this.key}${process.pid}-${randomBytes(4).toString('hex')}`;
  }

  /** Announce this instance (once it serves). */
  register(): Promise<void> {
    return new Promise((resolve, reject) => {
      const srv = createServer((c) => c.destroy());
      srv.once('error', reject);
      srv.listen(`\0${this.own}`, () => {
        srv.unref();
        this.server = srv;
        resolve();
      });
    });
  }

  /** The other instances serving now. */
  others(): number {
    let text: string;
    try {
      text = readFileSync('/proc/net/unix', 'utf8');
    } catch {
      return 0;
    }
    let n = 0;
    for (const line of text.split('\n')) {
      const path = line.slice(line.lastIndexOf(' ') + 1);
      if (path.startsWith(`@${this.key}`) && path !== `@${this.own}`) n++;
    }
    return n;
  }

  close(): void {
    this.server?.close();
    this.server = null;
  }
}
