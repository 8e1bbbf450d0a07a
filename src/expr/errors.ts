/** The two errors of an expression: one when the Corefile is loaded, one when it runs. */

export class ExprCompileError extends Error {}
export class ExprRunError extends Error {}
