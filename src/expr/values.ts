/** What expressions compute with, and what they may ask about the query they run for. */

export type ExprValue = string | bigint | number | boolean | null | readonly ExprValue[];

/** What an expression can ask about the query. */
export interface ExprQuery {
  name(): string;
  type(): string;
  class(): string;
  proto(): string;
  size(): number;
  clientIP(): string;
  port(): string;
  id(): number;
  opcode(): number;
  do(): boolean;
  bufsize(): number;
  serverIP(): string;
  serverPort(): string;
  /** A metadata label's value ('' when absent or without the metadata plugin). */
  metadata(label: string): string;
  /** Capture group by name or number ('' when there is none). */
  group(key: string): string;
}

export interface Scope {
  readonly q: ExprQuery;
  readonly vars: Map<string, ExprValue>;
}
