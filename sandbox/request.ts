/** What a request asks for: its resource path (group, version, namespace, name, legacy watch) and boolean query parameters. */
import { resourceByPlural, type ResourceDef } from './resources.js';

/** A boolean query parameter, true for the spellings Go's strconv.ParseBool accepts as true. */
export function parseBool(v: string | undefined): boolean {
  return v !== undefined && ['1', 'true', 't', 'True', 'TRUE', 'T'].includes(v);
}

/** A parsed resource request path. */
interface ResourcePath {
  res: ResourceDef;
  namespace?: string;
  name?: string;
  legacyWatch: boolean;
}

type PathMatch = ResourcePath | { error: number };

export function matchResourcePath(segs: string[]): PathMatch | undefined {
  let group: string;
  let rest: string[];
  if (segs[0] === 'api' && segs[1] === 'v1') {
    group = '';
    rest = segs.slice(2);
  } else if (segs[0] === 'apis' && segs[1] === 'discovery.k8s.io' && segs[2] === 'v1') {
    group = 'discovery.k8s.io';
    rest = segs.slice(3);
  } else if (segs[0] === 'apis' && segs[1] === 'multicluster.x-k8s.io' && segs[2] === 'v1alpha1') {
    group = 'multicluster.x-k8s.io';
    rest = segs.slice(3);
  } else {
    return undefined;
  }
  if (rest.length === 0) return undefined;
  let legacyWatch = false;
  if (rest[0] === 'watch') {
    legacyWatch = true;
    rest = rest.slice(1);
  }
  const [a, b, c, d, ...more] = rest;
  if (more.length > 0 || a === undefined) return { error: 404 };
  if (a === 'namespaces' && b !== undefined && c !== undefined) {
    const res = resourceByPlural(group, c);
    if (!res || !res.namespaced) return { error: 404 };
    return { res, namespace: b, ...(d !== undefined ? { name: d } : {}), legacyWatch };
  }
  if (c !== undefined) return { error: 404 };
  const res = resourceByPlural(group, a);
  if (!res) return { error: 404 };
  if (b !== undefined) {
    if (res.namespaced) return { error: 404 };
    return { res, name: b, legacyWatch };
  }
  return { res, legacyWatch };
}
