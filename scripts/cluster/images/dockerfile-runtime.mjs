// Reads the Dockerfile's runtime stage (the last one) so that images.sh builds the OCI image with
// the same configuration as `docker build` (test/cluster/image.test.ts checks the two agree).
// Prints JSON: { workdir, user, env: ["K=V"], entrypoint: [], cmd: [], expose: ["53/udp"],
// copies: [{ from, src, dest }], nodeCapabilities }. nodeCapabilities is the `setcap` argument the
// stage that supplies /nodejs/bin/node applies to it, or null when the Dockerfile grants none (then
// the chart binds port 53 some other way, and the image must not add a capability either).
// Usage: node dockerfile-runtime.mjs DOCKERFILE
import { readFileSync } from 'node:fs';

const text = readFileSync(process.argv[2] ?? 'Dockerfile', 'utf8').replace(/\\\n/g, ' ');
const stages = [];
for (const raw of text.split('\n')) {
  const line = raw.trim();
  if (line === '' || line.startsWith('#')) continue;
  const m = /^(\w+)\s+(.*)$/.exec(line);
  if (!m) continue;
  const keyword = m[1].toUpperCase();
  const args = m[2].trim();
  if (keyword === 'FROM') {
    const as = /\s+AS\s+(\S+)$/i.exec(args);
    stages.push({ name: as ? as[1] : null, instructions: [] });
  } else if (stages.length > 0) {
    stages.at(-1).instructions.push({ keyword, args });
  }
}
const final = stages.at(-1);
if (!final) throw new Error('Dockerfile has no FROM');

const out = {
  workdir: '/',
  user: '',
  env: [],
  entrypoint: [],
  cmd: [],
  expose: [],
  copies: [],
  nodeCapabilities: null,
};
for (const { keyword, args } of final.instructions) {
  if (keyword === 'WORKDIR') out.workdir = args;
  else if (keyword === 'USER') out.user = args;
  else if (keyword === 'ENV') {
    const m = /^(\w+)=(.*)$/.exec(args);
    if (!m) throw new Error(`ENV ${args}: only KEY=VALUE is supported`);
    out.env.push(`${m[1]}=${m[2]}`);
  } else if (keyword === 'ENTRYPOINT') out.entrypoint = JSON.parse(args);
  else if (keyword === 'CMD') out.cmd = JSON.parse(args);
  else if (keyword === 'EXPOSE') {
    for (const p of args.split(/\s+/)) out.expose.push(p.includes('/') ? p : `${p}/tcp`);
  } else if (keyword === 'COPY') {
    const words = args.split(/\s+/);
    let from = null;
    while (words[0]?.startsWith('--')) {
      const flag = words.shift();
      const m = /^--from=(\S+)$/.exec(flag);
      if (m) from = m[1];
    }
    const dest = words.pop();
    for (const src of words) out.copies.push({ from, src, dest });
  }
}
// The node binary: copied from a stage that ran `setcap CAPS FILE` on it, or the base image's own.
const nodeCopy = out.copies.find((c) => c.dest === '/nodejs/bin/node');
if (nodeCopy?.from) {
  const stage = stages.find((s) => s.name === nodeCopy.from);
  for (const { keyword, args } of stage?.instructions ?? []) {
    const m = keyword === 'RUN' ? /\bsetcap\s+(\S+)\s+(\S+)/.exec(args) : null;
    if (m && m[2] === nodeCopy.src) out.nodeCapabilities = m[1];
  }
}
process.stdout.write(`${JSON.stringify(out)}\n`);
