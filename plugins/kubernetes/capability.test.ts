/**
 * kubernetes offers its block's search path to `autopath @kubernetes` as a capability
 * (src/searchpath.ts, docs/ARCHITECTURE.md "Capabilities"), answered by the handler of the chain.
 */
import { describe, expect, it } from 'vitest';
import { SEARCH_PATH } from '../../src/searchpath.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { TestInstance } from '../../test/helpers/setup.js';
import { kubernetes, type KubernetesHandler } from './index.js';

describe('kubernetes: the search-path capability', () => {
  it('is offered at setup and answered by the handler the factory builds', async () => {
    const inst = new TestInstance();
    const block = inst.block({ zones: ['cluster.local.'] });
    const factory = await block.setup(
      kubernetes,
      'kubernetes cluster.local {\n pods verified\n endpoint http://127.0.0.1:1\n}',
    );
    block.seal();
    try {
      const cap = block.context('autopath').lookup(SEARCH_PATH);
      expect(cap?.plugin).toBe('kubernetes');
      const q = makeQuery('x.default.svc.cluster.local.', 'A');
      expect(cap!.autoPath(q)).toBeNull(); // no handler yet
      const h = factory!(null, block.runtime.info) as KubernetesHandler;
      // A client IP that is no known pod: no search path (the handler's own answer).
      expect(cap!.autoPath(q)).toBeNull();
      h.autoPath = () => ['default.svc.cluster.local.', ''];
      expect(cap!.autoPath(q)).toEqual(['default.svc.cluster.local.', '']);
    } finally {
      await inst.stop();
    }
  });
});
