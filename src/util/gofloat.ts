/** Go's `%v` of a float64, shared by the Go-template and expression languages so both print floats alike. */

/** Go's `%v` of a float64: shortest digits, exponent form below 1e-4 and from 1e6 (strconv 'g', -1). */
export function fmtFloatG(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (!Number.isFinite(f)) return f > 0 ? '+Inf' : '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const [mant, expText] = f.toExponential().split('e') as [string, string];
  const exp = Number(expText);
  if (exp < -4 || exp >= 6) return `${mant}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return String(f);
}
