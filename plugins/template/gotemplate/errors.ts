/** The two errors of a Go template: one when it is compiled, one when it is executed. */

export class TemplateParseError extends Error {}
export class TemplateExecError extends Error {}
