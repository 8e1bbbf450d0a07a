#!/usr/bin/env node
// `npm start`: compile dist/ with tsc, showing progress (a full build takes ~25 s on a 2-core
// machine and tsc itself prints nothing until it is done), then run dist/tools/dev.js — the sandbox
// cluster and clusterdns — in this process, with the arguments given after `npm start --`.
// Plain JavaScript because it runs before anything is compiled.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { clearInterval, setInterval } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const config = join(root, 'tsconfig.build.json');
const tty = process.stdout.isTTY === true;
const t0 = Date.now();
const seconds = () => Math.round((Date.now() - t0) / 1000);

/** .ts files tsc compiles for the build (tsconfig.build.json's include, minus tests): shown as the size of the job. */
function countSources(dir) {
  let n = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name === 'dist') continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) n += countSources(p);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts')) n++;
  }
  return n;
}

let files = 0;
try {
  for (const dir of JSON.parse(readFileSync(config, 'utf8')).include ?? []) files += countSources(join(root, dir));
} catch {
  // Only shown.
}

process.stdout.write(
  `npm start: [1/2] compiling ${files || 'the'} TypeScript files into dist/ (tsc -p tsconfig.build.json; about 25 s on 2 cores)\n`,
);
// tsc prints nothing until it is done: show that it is working. On a terminal one line counts the
// seconds; otherwise (CI, a pipe) a line every 5 s.
const report = () => {
  if (tty) process.stdout.write(`\rnpm start:       compiling... ${seconds()} s\u001b[K`);
  else process.stdout.write(`npm start:       compiling... ${seconds()} s\n`);
};
const timer = setInterval(report, tty ? 1000 : 5000);

const tsc = spawn(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', config], {
  cwd: root,
  stdio: ['ignore', 'inherit', 'inherit'],
});
const code = await new Promise((resolve) => tsc.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
clearInterval(timer);
if (tty) process.stdout.write('\r\u001b[K');
if (code !== 0) {
  process.stderr.write(`npm start: the build failed (tsc exit ${code}, after ${seconds()} s); see the errors above\n`);
  process.exit(code);
}
process.stdout.write(`npm start: [1/2] built dist/ in ${seconds()} s\n`);
process.stdout.write('npm start: [2/2] starting the sandbox cluster and clusterdns\n');
await import(pathToFileURL(join(root, 'dist/tools/dev.js')).href);
