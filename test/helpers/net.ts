/** Ports for tests: a port free for both UDP and TCP on 127.0.0.1. */
import * as dgram from 'node:dgram';
import * as net from 'node:net';

export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = net.createServer();
      srv.once('error', reject);
      srv.listen(0, host, () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    const udpOk = await new Promise<boolean>((resolve) => {
      const s = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
      s.once('error', () => resolve(false));
      s.bind(port, host, () => s.close(() => resolve(true)));
    });
    if (udpOk) return port;
  }
  throw new Error('no free port found');
}
