/**
 * A listener asked for port 0 binds UDP first, takes the port the kernel gave it and then listens
 * on TCP at the same number; another process may hold that TCP port already (or take it in
 * between), and the listen fails with EADDRINUSE although any other free port would do. The
 * open is then tried again on a new ephemeral port, a bounded number of times. A port chosen in
 * the Corefile or by -dns.port is never changed: its EADDRINUSE is the operator's to see.
 */

/** Opens tried in all for a port-0 listener whose UDP port's TCP twin was in use. */
export const EPHEMERAL_PORT_ATTEMPTS = 5;

function isAddrInUse(e: unknown): boolean {
  return (e as NodeJS.ErrnoException | null)?.code === 'EADDRINUSE';
}

/**
 * Run `open` once, or, when the listener asked for an ephemeral port, again after `reset` each
 * time it fails with EADDRINUSE, up to EPHEMERAL_PORT_ATTEMPTS opens; the last error is thrown.
 */
export async function openOnEphemeralPort(
  ephemeral: boolean,
  open: () => Promise<void>,
  reset: () => void,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await open();
      return;
    } catch (e) {
      if (!ephemeral || !isAddrInUse(e) || attempt >= EPHEMERAL_PORT_ATTEMPTS) throw e;
      reset();
    }
  }
}
