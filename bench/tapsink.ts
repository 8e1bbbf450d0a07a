/**
 * A dnstap collector for the bench's `dnstap` scenario (bench/run.ts): listens on a unix socket,
 * plays the reader's side of the Frame Streams handshake (READY → ACCEPT; STOP → FINISH) and
 * discards the records, counting them. It runs as its own process on the load generator's core,
 * so its CPU counts for neither server. Prints `tapsink listening` when ready and `frames N`
 * (the total so far) each second the count moved.
 * Usage: node dist/bench/tapsink.js SOCKET_PATH
 */
import { rmSync } from 'node:fs';
import * as net from 'node:net';
import { CONTENT_TYPE, Control, controlFrame, FrameReader } from '../src/dnstap/framestream.js';

const path = process.argv[2];
if (path === undefined) {
  process.stderr.write('usage: tapsink SOCKET_PATH\n');
  process.exit(2);
}
rmSync(path, { force: true });
let frames = 0;
let reported = 0;
const server = net.createServer((s) => {
  const r = new FrameReader(
    () => frames++,
    (c) => {
      if (c.type === Control.READY) s.write(controlFrame(Control.ACCEPT, [CONTENT_TYPE]));
      else if (c.type === Control.STOP) s.end(controlFrame(Control.FINISH, []));
    },
  );
  s.on('data', (b: Buffer) => r.push(b));
  s.on('error', () => s.destroy());
});
server.listen(path, () => process.stdout.write('tapsink listening\n'));
setInterval(() => {
  if (frames === reported) return;
  reported = frames;
  process.stdout.write(`frames ${frames}\n`);
}, 1000);
