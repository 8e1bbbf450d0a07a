/**
 * The log plugin's line format: CoreDNS's replacer (src/replacer.ts) plus what only *log* has:
 * `{common}` and `{combined}` expand to CoreDNS's formats, and `{/log/class}`, `{/log/type}` are the
 * reply's class and type (the metadata CoreDNS's log sets for its own line).
 */
import type { ReplyClass, ReplyType } from '../../src/dns/response.js';
import {
  compileTemplate,
  formatFlags,
  formatSeconds,
  renderTemplate,
  type ReplacerState,
  type Template,
} from '../../src/replacer.js';

export { formatFlags, formatSeconds };

export const COMMON_FORMAT =
  '{remote}:{port} - {>id} "{type} {class} {name} {proto} {size} {>do} {>bufsize}" {rcode} {>rflags} {rsize} {duration}';
export const COMBINED_FORMAT = `${COMMON_FORMAT} "{>opcode}"`;

/** Facts about one finished query used to render a line (the log plugin always has a recorder). */
export interface LogEntry extends ReplacerState {
  readonly recorded: NonNullable<ReplacerState['recorded']>;
  readonly klass: ReplyClass;
  readonly rtype: ReplyType;
}

const LOG_PLACEHOLDERS = {
  '/log/class': (e: LogEntry) => e.klass,
  '/log/type': (e: LogEntry) => e.rtype,
};

/** Compile a format string; unknown `{...}` are copied literally. */
export function compileFormat(format: string): Template<LogEntry> {
  const expanded = format.replaceAll('{common}', COMMON_FORMAT).replaceAll('{combined}', COMBINED_FORMAT);
  return compileTemplate<LogEntry>(expanded, LOG_PLACEHOLDERS);
}

export function render(t: Template<LogEntry>, e: LogEntry): string {
  return renderTemplate(t, e);
}
