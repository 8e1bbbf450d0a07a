/**
 * Upstream errors in Go's wording, as CoreDNS's forward returns them and the errors plugin logs
 * them (`*net.OpError` around an `os.SyscallError`):
 *
 *     dial udp [2001:db8::1]:53: connect: network is unreachable
 *     read udp 127.0.0.1:52983->127.0.0.1:9: read: connection refused
 *     read udp 127.0.0.1:53876->127.0.0.1:15399: i/o timeout
 *
 * Node's errors carry the errno name (`code`) and the system call (`syscall`); both are mapped to
 * Go's texts. An error Node raises without an errno keeps its own message.
 */

/** Go's `syscall.Errno.Error()` texts (Linux) for the errnos a socket can report. */
const ERRNO_TEXT: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENETUNREACH: 'network is unreachable',
  EHOSTUNREACH: 'no route to host',
  ECONNRESET: 'connection reset by peer',
  ECONNABORTED: 'software caused connection abort',
  ETIMEDOUT: 'connection timed out',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EADDRNOTAVAIL: 'cannot assign requested address',
  EADDRINUSE: 'address already in use',
  EAFNOSUPPORT: 'address family not supported by protocol',
  EINVAL: 'invalid argument',
  EMSGSIZE: 'message too long',
  ENOBUFS: 'no buffer space available',
  EPIPE: 'broken pipe',
  EHOSTDOWN: 'host is down',
  ENETDOWN: 'network is down',
  ENETRESET: 'network dropped connection on reset',
  ENOTCONN: 'transport endpoint is not connected',
};

/** Node's system call names → the names Go's net package reports. */
const SYSCALL: Readonly<Record<string, string>> = {
  connect: 'connect',
  bind: 'bind',
  recvmsg: 'read',
  recv: 'read',
  read: 'read',
  send: 'write',
  sendmsg: 'write',
  write: 'write',
  writev: 'write',
};

export type GoOp = 'dial' | 'read' | 'write';

/** `host:port` as Go's net.JoinHostPort writes it (`[::1]:53`). */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** `syscall: text` for a Node system error, or its message when it has no errno. */
export function goCause(err: Error, fallbackSyscall: string): string {
  const e = err as NodeJS.ErrnoException;
  const text = e.code !== undefined ? ERRNO_TEXT[e.code] : undefined;
  if (text === undefined) return err.message;
  const syscall = (e.syscall !== undefined ? SYSCALL[e.syscall] : undefined) ?? fallbackSyscall;
  return `${syscall}: ${text}`;
}

/**
 * `OP NET [LOCAL->]REMOTE: CAUSE`, Go's `net.OpError` text. `local` is omitted when unknown (dial
 * errors before the socket has an address).
 */
export function goNetError(
  op: GoOp,
  net: 'udp' | 'tcp',
  local: string | null,
  remote: string,
  cause: Error | string,
): Error {
  const addr = local ? `${local}->${remote}` : remote;
  const why = typeof cause === 'string' ? cause : goCause(cause, op === 'dial' ? 'connect' : op);
  return new Error(`${op} ${net} ${addr}: ${why}`);
}

/** A deadline error (`i/o timeout`). */
export function goTimeout(op: GoOp, net: 'udp' | 'tcp', local: string | null, remote: string): Error {
  return goNetError(op, net, local, remote, 'i/o timeout');
}
