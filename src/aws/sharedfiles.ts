/**
 * The AWS shared config and credentials files (~/.aws/config, ~/.aws/credentials) read as
 * aws-sdk-go-v2's internal/ini reads them, which CoreDNS 1.15.0's route53 and dnssec use through
 * `config.LoadDefaultConfig`: keys lower-cased, a section named twice merged (the later value
 * wins), `#` and `;` start comments. Which section a profile is, and what is taken from it, each
 * caller decides (src/aws/config.ts).
 */
import { readFileSync } from 'node:fs';

/** Section name → key → value. */
export type IniSections = Map<string, Map<string, string>>;

/**
 * The sections of the INI file at `path`; a missing or unreadable file has none (the SDK carries on
 * to its next source). With `config`, a `[profile NAME]` section is named NAME, as profiles of the
 * shared config file are looked up by route53.
 */
export function readAwsIni(path: string, config = false): IniSections {
  const out: IniSections = new Map();
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return out;
  }
  let cur: Map<string, string> | null = null;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/[#;].*$/, '').trim();
    if (line === '') continue;
    const sec = /^\[\s*(.*?)\s*\]$/.exec(line);
    if (sec) {
      let name = sec[1]!;
      if (config && name.startsWith('profile ')) name = name.slice(8).trim();
      cur = out.get(name) ?? new Map<string, string>();
      out.set(name, cur);
      continue;
    }
    const eq = line.indexOf('=');
    if (cur !== null && eq > 0) cur.set(line.slice(0, eq).trim().toLowerCase(), line.slice(eq + 1).trim());
  }
  return out;
}
