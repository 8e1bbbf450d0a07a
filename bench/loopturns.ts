/**
 * Preloaded into a server by `npm run bench -- --axfr --turns` (`node --import …/loopturns.js`):
 * the CPU time of each turn of the event loop, so that what the process itself does between two
 * chances to read a socket (a transfer's slice, a sort, a collection) is seen apart from the time
 * other processes on its core take (which a latency percentile mixes in). An immediate re-armed at
 * every turn reads `process.cpuUsage()` (the whole process: GC helper threads on the same pinned
 * core count, as they delay the main thread there too). SIGWINCH (which the server leaves alone)
 * writes one `LOOPTURNS {json}` line to stderr with the histogram since the last one and starts
 * over. The immediate keeps the loop from ever blocking in poll: a measuring aid, not a server mode.
 */
/** Turns by CPU time in 10 µs buckets up to 200 ms (the last bucket holds the longer ones): a fixed 80 KB, so the server's RSS is not the measurement's. */
const BUCKET_MS = 0.01;
const counts = new Uint32Array(20_000);
let maxMs = 0;
let last = process.cpuUsage();

function tick(): void {
  const now = process.cpuUsage();
  const ms = (now.user - last.user + now.system - last.system) / 1000;
  counts[Math.min(counts.length - 1, Math.floor(ms / BUCKET_MS))]!++;
  if (ms > maxMs) maxMs = ms;
  last = now;
  setImmediate(tick);
}
setImmediate(tick);

process.on('SIGWINCH', () => {
  let turns = 0;
  for (const c of counts) turns += c;
  /** The upper edge of the bucket that holds the q-th percentile turn. */
  const at = (q: number): number => {
    const rank = Math.ceil((turns * q) / 100);
    let seen = 0;
    for (let i = 0; i < counts.length; i++) {
      seen += counts[i]!;
      if (seen >= rank) return (i + 1) * BUCKET_MS;
    }
    return maxMs;
  };
  const over = (ms: number): number => {
    let n = 0;
    for (let i = Math.round(ms / BUCKET_MS); i < counts.length; i++) n += counts[i]!;
    return n;
  };
  const out = {
    turns,
    p50: at(50),
    p99: at(99),
    p999: at(99.9),
    max: maxMs,
    over2: over(2),
    over5: over(5),
    over10: over(10),
  };
  process.stderr.write(`LOOPTURNS ${JSON.stringify(out)}\n`);
  counts.fill(0);
  maxMs = 0;
  last = process.cpuUsage();
});
