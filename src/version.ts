/** Product name and version, as `-version` and `coredns_build_info` report them. */
import { readFileSync } from 'node:fs';

function readPackageVersion(): string {
  for (const rel of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'clusterdns' && pkg.version) return pkg.version;
    } catch {
      /* try the next location (source tree vs dist/) */
    }
  }
  return '0.0.0';
}

export const PRODUCT = 'clusterdns';
export const VERSION = readPackageVersion();
/** Git commit the build came from; set by the image build (CLUSTERDNS_REVISION), else `unknown`. */
export const REVISION = process.env.CLUSTERDNS_REVISION ?? 'unknown';
/** `clusterdns-0.1.0` — the shape of CoreDNS's `CoreDNS-1.14.7`. */
export const VERSION_LINE = `${PRODUCT}-${VERSION}`;
/** `linux/x64, v20.20.2, <commit>` — the shape of `linux/amd64, go1.24.1, <commit>`. */
export const PLATFORM_LINE = `${process.platform}/${process.arch}, ${process.version}, ${REVISION}`;
