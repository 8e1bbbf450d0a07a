/**
 * The command as operators run it: `bin/clusterdns -conf F -dns.port P`, answered by dig and kdig,
 * flags, exit codes, bad Corefiles, signals. Requires `npm run build` (done by `npm test`).
 *
 * `-h` and `-plugins` are compared with CoreDNS 1.15.0's output, captured from the real binary
 * into test/fixtures/cli/ (`coredns -h 2> coredns-1.15.0-h.txt`, `coredns -plugins >
 * coredns-1.15.0-plugins.txt`, run as `coredns` from PATH).
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rcode, udpQuery } from '../helpers/dns.js';
import { freePort } from '../helpers/net.js';
import { hasTool, runCommand, runTool, spawnServer } from '../helpers/spawn.js';

const WHOAMI = 'example.org {\n  whoami\n  log\n  errors\n}\n';
const FIXTURES = resolve(import.meta.dirname, '../fixtures/cli');
const COREDNS_USAGE = readFileSync(join(FIXTURES, 'coredns-1.15.0-h.txt'), 'utf8');
const COREDNS_PLUGINS = readFileSync(join(FIXTURES, 'coredns-1.15.0-plugins.txt'), 'utf8');

/** Usage text as `-name type` → the whole entry (head line and help lines). */
function usageEntries(text: string): Map<string, string> {
  const entries = new Map<string, string>();
  let current = '';
  for (const line of text.split('\n').slice(1)) {
    if (line.startsWith('  -')) {
      current = line.trim().split(' ')[0]!;
      entries.set(current, line);
    } else if (line !== '') {
      entries.set(current, `${entries.get(current)!}\n${line}`);
    }
  }
  return entries;
}

describe('bin/clusterdns', () => {
  it('prints the version in two lines', () => {
    const v = runCommand(['-version']);
    expect(v.status).toBe(0);
    const lines = v.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^clusterdns-\d+\.\d+\.\d+/);
    expect(lines[1]).toMatch(/^linux\/\w+, v\d+/);
  });

  /** Plugins clusterdns has and CoreDNS 1.15.0 has not. */
  const BEYOND_COREDNS = ['shadow'];

  it('-plugins lists the plugins in the layout of CoreDNS 1.15.0: one sorted name per line, then an empty line', () => {
    // CoreDNS's own output has that shape (its last name is the `on` event plugin).
    expect(COREDNS_PLUGINS).toMatch(/^([a-z0-9_]+\n)+\n$/);
    const coreNames = COREDNS_PLUGINS.trim().split('\n');
    for (const args of [['-plugins'], ['--plugins'], ['-plugins=true']]) {
      const p = runCommand(args);
      expect(p.status).toBe(0);
      expect(p.stderr).toBe('');
      expect(p.stdout).toMatch(/^([a-z0-9_]+\n)+\n$/);
      const names = p.stdout.trim().split('\n');
      // Sorted, but for Caddy's generic `on`, which CoreDNS lists after the DNS plugins.
      const dnsNames = names.filter((n) => n !== 'on');
      expect(names).toEqual([...dnsNames.sort(), ...(names.includes('on') ? ['on'] : [])]);
      for (const n of ['kubernetes', 'forward', 'cache', 'whoami', 'health', 'ready', 'prometheus', 'reload'])
        expect(names).toContain(n);
      // Every plugin we list is a CoreDNS plugin of the same name, but for the ones clusterdns
      // adds (docs/corefile.md §11).
      for (const n of names.filter((x) => !BEYOND_COREDNS.includes(x))) expect(coreNames).toContain(n);
      for (const n of BEYOND_COREDNS) expect(names).toContain(n);
    }
  });

  it('-h, -help and --help print the usage on stderr in Go flag layout and exit 0, as CoreDNS does', () => {
    const ours = runCommand(['-h']);
    expect(ours.status).toBe(0);
    expect(ours.stdout).toBe('');
    expect(ours.stderr.split('\n')[0]).toBe('Usage of clusterdns:');
    for (const args of [['-help'], ['--help'], ['-h=false'], ['-quiet', '-help']]) {
      const r = runCommand(args);
      expect(r.status).toBe(0);
      expect(r.stderr).toBe(ours.stderr);
    }
    // Every flag CoreDNS 1.15.0 has reads exactly as in CoreDNS's usage, and the entries are
    // sorted by name as Go prints them.
    const mine = usageEntries(ours.stderr);
    const theirs = usageEntries(COREDNS_USAGE);
    expect(COREDNS_USAGE.split('\n')[0]).toBe('Usage of coredns:');
    expect(theirs.size).toBe(8);
    for (const [name, entry] of theirs) expect(mine.get(name), name).toBe(entry);
    expect(mine.get('-log-format')).toBe('  -log-format string\n    \tLog format (text or json) (default "text")');
    expect([...mine.keys()]).toEqual([...mine.keys()].sort());
    expect(mine.get('-validate')).toMatch(/^ {2}-validate\n {4}\t/);
  });

  it('rejects bad flags with status 2, the reason and the usage, and extra arguments with status 1', () => {
    const usage = runCommand(['-h']).stderr;
    // The reasons are Go's flag package's, as CoreDNS 1.15.0 prints them.
    for (const [args, reason] of [
      [['-nope'], 'flag provided but not defined: -nope'],
      [['--nope=1'], 'flag provided but not defined: -nope'],
      [['-quiet=x'], 'invalid boolean value "x" for -quiet: parse error'],
      [['-conf'], 'flag needs an argument: -conf'],
      [['---x'], 'bad flag syntax: ---x'],
      [['-=x'], 'bad flag syntax: -=x'],
    ] as const) {
      const r = runCommand([...args]);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toBe(`${reason}\n${usage}`);
    }
    const extra = runCommand(['-quiet', 'a', 'b']);
    expect(extra.status).toBe(1);
    expect(extra.stdout + extra.stderr).toContain('extra command line arguments: [a b]');
  });

  it('serves dig over UDP and kdig over TCP (several queries, one connection)', async () => {
    for (const [tool, pkg] of [
      ['dig', 'dnsutils'],
      ['kdig', 'knot-dnsutils'],
    ] as const) {
      if (!hasTool(tool)) throw new Error(`${tool} is not installed (apt-get install ${pkg}; .ci/run installs it)`);
    }
    const s = await spawnServer(WHOAMI);
    try {
      await s.waitFor(/^clusterdns-/);
      expect(s.output).toContain(`example.org.:${s.port}`);
      const d = runTool('dig', [
        '@127.0.0.1',
        '-p',
        String(s.port),
        'www.example.org',
        'A',
        '+noall',
        '+comments',
        '+additional',
      ]);
      expect(d.stdout).toContain('status: NOERROR');
      expect(d.stdout).toMatch(/www\.example\.org\.\s+0\s+IN\s+A\s+127\.0\.0\.1/);
      const k = runTool('kdig', [
        '@127.0.0.1',
        '-p',
        String(s.port),
        '+tcp',
        '+keepopen',
        'a.example.org',
        'b.example.org',
        'c.example.org',
      ]);
      expect(k.status).toBe(0);
      expect(k.stdout.match(/status: NOERROR/g)?.length).toBe(3);
      expect(k.stdout).toMatch(/_tcp\.a\.example\.org\.\s+0\s+IN\s+SRV/);
      // The log plugin's default line shape.
      await s.waitFor(
        /^\[INFO\] 127\.0\.0\.1:\d+ - \d+ "A IN www\.example\.org\. udp \d+ (true|false) 1232" NOERROR qr,aa,rd \d+ \d+(\.\d+)?s$/,
      );
      const refused = runTool('dig', ['@127.0.0.1', '-p', String(s.port), 'www.google.com', '+noall', '+comments']);
      expect(refused.stdout).toContain('status: REFUSED');
    } finally {
      expect(await s.stop('SIGTERM')).toBe(0);
    }
    expect(s.output).toContain('[INFO] SIGTERM: Shutting down servers then terminating');
  });

  it('exits 1 naming file:line for a broken Corefile, without serving', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-bad-'));
    const file = join(dir, 'Corefile');
    writeFileSync(file, '.:53 {\n  whoami\n  frobnicate\n}\n');
    const r = runCommand(['-conf', file, '-dns.port', String(await freePort())]);
    expect(r.status).toBe(1);
    // CoreDNS's mustLogFatal: the message alone on stderr, no level prefix.
    expect(r.stderr).toMatch(/^\S*Corefile:3 - Error during parsing: Unknown directive 'frobnicate'\n$/m);
    expect(r.stdout + r.stderr).not.toContain('[FATAL]');
  });

  it('-validate prints every parse and setup error in line order, names unset variables, and exits 1', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-val-'));
    mkdirSync(join(dir, 'conf.d'));
    writeFileSync(join(dir, 'conf.d', 'extra.conf'), 'cache 30\nfrob2\n');
    const bad = join(dir, 'bad');
    writeFileSync(
      bad,
      [
        'a.org {', //                       1
        '  errors bogus', //                2  setup error (errors)
        '  frob', //                        3  parse error, the block goes on
        '  forward . {$CLUSTERDNS_T_UP}', // 4  unset variable, then a setup error (forward)
        '  import conf.d/*.conf', //        5  an imported file with a parse error
        '}',
        'b.org, {', //                      7  parse error (extra comma)
        '  log',
        '  errors x y', //                  9  setup error
        '  cache {$CLUSTERDNS_T_TTL}',
        '  whoami }', //                    11 parse error
        'c.org {',
        '  import missing.conf', //         13 parse error
        '  cache {%CLUSTERDNS_T_TTL%} {',
        '    success 10 {$CLUSTERDNS_T_SET}', // 15 set but empty
        '  }',
        '}',
        '',
      ].join('\n'),
    );
    const r = runCommand(['-validate', '-conf', bad], { env: { CLUSTERDNS_T_SET: '' } });
    expect(r.status).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toEqual([
      `[WARNING] ${bad}:4 - environment variable CLUSTERDNS_T_UP is not set: it reads as empty`,
      `[WARNING] ${bad}:10 - environment variable CLUSTERDNS_T_TTL is not set: it reads as empty (also used at ${bad}:14)`,
      `plugin/errors: ${bad}:2 - Error during parsing: invalid log file: bogus`,
      `${bad}:3 - Error during parsing: Unknown directive 'frob'`,
      `plugin/forward: ${bad}:4 - Error during parsing: invalid address: ""`,
      `${bad}:7 - Error during parsing: Expected another address but had '{' - check for extra comma`,
      `plugin/errors: ${bad}:9 - Error during parsing: Wrong argument count or unexpected line ending after 'y'`,
      `${bad}:11 - Error during parsing: Unexpected '}' because no matching opening brace`,
      `${bad}:13 - Error during parsing: File to import not found: missing.conf`,
      // Set but empty: no warning, and the empty argument is the cache plugin's error.
      `plugin/cache: ${bad}:15 - Error during parsing: strconv.Atoi: parsing "": invalid syntax`,
      `${join(dir, 'conf.d', 'extra.conf')}:2 - Error during parsing: Unknown directive 'frob2'`,
      `Configuration has 9 errors: ${bad}`,
    ]);
    expect(r.stdout).not.toContain('Configuration OK');
  });

  it('-validate says which Corefile it checked: -conf, ./Corefile, standard input or the built-in default', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-val-'));
    const good = join(dir, 'good');
    writeFileSync(good, WHOAMI + '(snip) {\n  log\n}\nexample.net {\n  import snip\n}\n');
    const ok = runCommand(['-validate', '-conf', good]);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toBe(`Configuration OK: ${good} (2 server blocks)\n`);
    expect(ok.stderr).toBe('');

    const relative = runCommand(['-validate', '-conf', 'good'], { cwd: dir });
    expect(relative.stdout).toBe(`Configuration OK: good (${good}) (2 server blocks)\n`);

    const empty = mkdtempSync(join(tmpdir(), 'clusterdns-val-'));
    const none = runCommand(['-validate', '-dns.port', '1053'], { cwd: empty });
    expect(none.status).toBe(0);
    expect(none.stdout).toBe(
      `Configuration OK: no ./Corefile in ${empty} and no -conf: validated the built-in default ".:1053 { whoami log }" (1 server block)\n`,
    );

    writeFileSync(join(empty, 'Corefile'), '# nothing yet\n');
    const blank = runCommand(['-validate'], { cwd: empty });
    expect(blank.stdout).toBe(
      `Configuration OK: ./Corefile (${join(empty, 'Corefile')}) has no server blocks: validated the built-in default ".:53 { whoami log }" (1 server block)\n`,
    );

    writeFileSync(join(empty, 'Corefile'), WHOAMI);
    const local = runCommand(['-validate'], { cwd: empty });
    expect(local.stdout).toBe(`Configuration OK: ./Corefile (${join(empty, 'Corefile')}) (1 server block)\n`);

    const stdin = runCommand(['-validate', '-conf', 'stdin'], { input: 'a.org {\n  nope\n}\n' });
    expect(stdin.status).toBe(1);
    expect(stdin.stderr).toBe(
      "stdin:2 - Error during parsing: Unknown directive 'nope'\nConfiguration has 1 error: standard input (-conf stdin)\n",
    );

    const missing = runCommand(['-validate', '-conf', join(dir, 'nothere')]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain(`Configuration not checked: cannot read ${join(dir, 'nothere')}`);
  });

  it('exits 1 with a one-line reason when the port is in use', async () => {
    const port = await freePort();
    const blocker = net.createServer().listen(port, '::');
    await new Promise((r) => blocker.once('listening', r));
    try {
      const r = runCommand(['-conf', 'stdin', '-dns.port', String(port)], { input: WHOAMI });
      expect(r.status).toBe(1);
      expect(
        r.stderr
          .trim()
          .split('\n')
          .filter((l) => /EADDRINUSE|address already in use/.test(l)),
      ).toHaveLength(1);
      expect(r.stdout + r.stderr).not.toContain('[FATAL]');
    } finally {
      blocker.close();
    }
  });

  it('falls back to the built-in default (whoami on -dns.port) without a Corefile, and writes the pidfile', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-def-'));
    const port = await freePort();
    const { spawn } = await import('node:child_process');
    const { BIN } = await import('../helpers/spawn.js');
    const pidfile = join(dir, 'pid');
    const proc = spawn(process.execPath, [BIN, '-dns.port', String(port), '-pidfile', pidfile], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: string[] = [];
    const ready = new Promise<void>((resolve, reject) => {
      proc.stdout.on('data', (c: Buffer) => {
        out.push(c.toString());
        if (out.join('').includes(`.:${port}`)) resolve();
      });
      proc.on('exit', () => reject(new Error(out.join(''))));
    });
    await ready;
    try {
      const r = await udpQuery(port, 'anything.test', 'A');
      expect(rcode(r)).toBe(0);
      expect(r.additionals.some((a) => a.type === 'A')).toBe(true);
      expect(Number(readFileSync(pidfile, 'utf8').trim())).toBe(proc.pid);
    } finally {
      proc.kill('SIGINT');
      await new Promise((r) => proc.on('exit', r));
    }
  });
});
