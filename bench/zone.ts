/**
 * `npm run bench:zone`: what a master-file zone costs once loaded (heap bytes per record, load
 * time) and per lookup (existing, missing and wildcard names, with and without DO), for the zone
 * code of this checkout and, with `--baseline DIR`, of another built checkout beside it: the
 * lookup rounds alternate between the two and medians are compared.
 *
 * Usage: npm run bench:zone -- [--records 60000] [--baseline /path/to/other/checkout]
 */
import { parseArgs } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values } = parseArgs({
  options: { records: { type: 'string', default: '60000' }, baseline: { type: 'string' } },
});
const RECORDS = Number(values.records);

interface Zone {
  lookup(
    qname: string,
    qtype: number,
    d: boolean,
    loop: number,
    up: () => { answer: never[]; result: number },
  ): Promise<unknown>;
}
type LoadZone = (text: string, origin: string, file: string, serial: number) => Zone;

function zoneText(n: number): string {
  const lines = [
    '$ORIGIN example.org.',
    '@ 3600 IN SOA ns.example.org. admin.example.org. 1 7200 3600 1209600 3600',
    '@ 3600 IN NS ns.example.org.',
    'ns 3600 IN A 192.0.2.53',
    '*.w 3600 IN A 192.0.2.7',
  ];
  for (let i = 0; i < n; i++) lines.push(`h${i} 3600 IN A 198.51.${(i >> 8) & 255}.${i & 255}`);
  return `${lines.join('\n')}\n`;
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:zone does)');

async function loader(checkout: string): Promise<LoadZone> {
  const mod = (await import(pathToFileURL(join(checkout, 'dist/src/zone/load.js')).href)) as { loadZone: LoadZone };
  return mod.loadZone;
}

const text = zoneText(RECORDS);
const sides: { name: string; load: LoadZone }[] = [{ name: 'this checkout', load: await loader(root) }];
if (values.baseline)
  sides.push({ name: `baseline (${values.baseline})`, load: await loader(resolve(values.baseline)) });

const zones: Zone[] = [];
for (const s of sides) {
  gc();
  const before = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const z = s.load(text, 'example.org.', 'db.example.org', 0);
  const ms = performance.now() - t0;
  gc();
  const bytes = process.memoryUsage().heapUsed - before;
  zones.push(z);
  console.log(
    `${s.name}: ${RECORDS} records loaded in ${ms.toFixed(0)} ms, heap ${(bytes / 1048576).toFixed(1)} MiB = ${Math.round(bytes / RECORDS)} bytes per record`,
  );
}

const names: string[] = [];
for (let i = 0; i < 1000; i++)
  names.push(`h${(i * 7919) % RECORDS}.example.org.`, `nx${i}.example.org.`, `a${i}.w.example.org.`);
const upstream = () => ({ answer: [] as never[], result: 0 });
async function round(z: Zone): Promise<number> {
  const t0 = performance.now();
  for (let r = 0; r < 10; r++)
    for (const n of names) {
      await z.lookup(n, 1, false, 0, upstream);
      await z.lookup(n, 28, r % 4 === 0, 0, upstream);
    }
  return performance.now() - t0;
}
const lookups = 10 * names.length * 2;
const runs: number[][] = sides.map(() => []);
for (let r = 0; r < 7; r++) {
  const order = r % 2 ? [...sides.keys()].reverse() : [...sides.keys()];
  for (const i of order) runs[i]!.push(await round(zones[i]!));
}
const median = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1]!;
sides.forEach((s, i) =>
  console.log(`${s.name}: ${((median(runs[i]!) * 1000) / lookups).toFixed(2)} µs per lookup (median of 7 rounds)`),
);
if (sides.length === 2) console.log(`lookup time this/baseline: ${(median(runs[0]!) / median(runs[1]!)).toFixed(3)}`);
