/**
 * `-validate`: check a configuration without serving. It says which Corefile it checked (the
 * `-conf` file, standard input, `./Corefile`, or the built-in default when there is none), warns
 * once per environment variable the Corefile uses that is not set (with every `file:line`), prints
 * every parse and setup error in reading order, and exits 1 when there was an error, else 0.
 *
 * Parse errors do not stop the check: the parser recovers (ParseOptions.recover) and the blocks
 * that parsed are still set up, so one run lists everything to fix. Nothing is started: no
 * listener, no Kubernetes connection.
 */
import { resolve } from 'node:path';
import { PLUGINS, isForeignDirective } from '../../plugins/index.js';
import { defaultCorefile, parseCorefileWithFiles } from '../corefile/parser.js';
import { makeLoader } from '../serve.js';
import { Server } from '../server/server.js';
import type { ConfigSource } from '../server/instance.js';
import type { Flags } from './flags.js';

export interface ValidateIO {
  out(line: string): void;
  err(line: string): void;
  readonly cwd: string;
  readonly env: Record<string, string | undefined>;
}

const STDIO: ValidateIO = {
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
  cwd: process.cwd(),
  env: process.env,
};

/** Runs the check and returns the exit code (0: no errors, 1: errors or the file cannot be read). */
export async function runValidate(flags: Pick<Flags, 'conf' | 'dnsPort'>, io: ValidateIO = STDIO): Promise<number> {
  const load = makeLoader(flags, io.cwd);
  let source: ConfigSource;
  try {
    source = await load();
  } catch (e) {
    io.err(`${(e as Error).message}`);
    io.err(`Configuration not checked: cannot read ${flags.conf}`);
    return 1;
  }

  // A first, recovering parse for what only the CLI reports: unset variables and whether the
  // built-in default applies. (The setup check below parses again, the way the server does.)
  const unset = new Map<string, string[]>();
  const parsed = parseCorefileWithFiles(source.text, source.path, {
    isDirective: (n) => PLUGINS.some((p) => p.name === n),
    isForeignDirective,
    env: io.env,
    recover: true,
    warn: () => {}, // the setup check logs the parser's warnings
    onUnsetEnv: (name, tok) => {
      const where = `${tok.file}:${tok.line}`;
      const list = unset.get(name) ?? [];
      if (!list.includes(where)) list.push(where);
      unset.set(name, list);
    },
  });
  const usesDefault = parsed.blocks.length === 0 && parsed.errors.length === 0;
  const what = describeSource(source, flags, io.cwd, usesDefault);

  for (const [name, places] of unset) {
    const also = places.length > 1 ? ` (also used at ${places.slice(1).join(', ')})` : '';
    io.err(`[WARNING] ${places[0]} - environment variable ${name} is not set: it reads as empty${also}`);
  }

  const server = new Server({
    dnsPort: flags.dnsPort,
    loadSource: () => Promise.resolve(source),
    quiet: true,
    env: io.env,
  });
  const errors = await server.validate();
  for (const e of errors) io.err(e);
  if (errors.length > 0) {
    io.err(`Configuration has ${errors.length} error${errors.length === 1 ? '' : 's'}: ${what}`);
    return 1;
  }
  const blocks = usesDefault ? 1 : parsed.blocks.length;
  io.out(`Configuration OK: ${what} (${blocks} server block${blocks === 1 ? '' : 's'})`);
  return 0;
}

/** Which configuration was checked, in words. */
function describeSource(
  source: ConfigSource,
  flags: Pick<Flags, 'conf' | 'dnsPort'>,
  cwd: string,
  usesDefault: boolean,
): string {
  const builtin = `the built-in default "${defaultCorefile(flags.dnsPort).replace(/\n/g, ' ').trim()}"`;
  let file: string;
  if (source.path === 'stdin') file = 'standard input (-conf stdin)';
  else if (source.path === '<default>') return `no ./Corefile in ${cwd} and no -conf: validated ${builtin}`;
  else if (flags.conf === '') file = `./Corefile (${resolve(cwd, 'Corefile')})`;
  else file = resolve(cwd, source.path) === source.path ? source.path : `${source.path} (${resolve(cwd, source.path)})`;
  return usesDefault ? `${file} has no server blocks: validated ${builtin}` : file;
}
