import type { Answer } from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { BareSetupError, ConfigError } from '../../src/corefile/types.js';
import { runCorefile } from '../../test/helpers/corefile.js';
import { configError, dispenserFor } from '../../test/helpers/setup.js';
import { parseView } from './setup.js';

function firstA(answers: readonly Answer[] | undefined): string {
  const a = answers?.[0];
  return a && a.type === 'A' ? a.data : '';
}

describe('view setup (CoreDNS 1.15.0 plugin/view/setup_test.go)', () => {
  it.each([
    ["view example {\n expr name() == 'example.com.'\n}", 1],
    ["view example {\n expr incidr(client_ip(), '10.0.0.0/24')\n}", 1],
    ["view example {\n expr name() == 'example.com.'\n expr name() == 'example2.com.'\n}", 2],
    ['view example', 0],
  ])('%s', (text, count) => {
    const v = parseView(dispenserFor(text, 'view'));
    expect(v.name).toBe('example');
    expect(v.exprs.length).toBe(count);
  });

  it('refuses a missing name, an unknown property and a bad expression', () => {
    expect(configError(() => parseView(dispenserFor('view', 'view')), 'no name').message).toBe(
      "Wrong argument count or unexpected line ending after 'view'",
    );
    expect(configError(() => parseView(dispenserFor('view x {\n foo bar\n}', 'view')), 'foo').message).toBe(
      "unknown property 'foo'",
    );
    const bad = configError(() => parseView(dispenserFor('view x {\n expr 1 +\n}', 'view')), 'bad expr');
    expect(bad).toBeInstanceOf(BareSetupError);
    // expr-lang's layout: the message, the source, a caret under the column; no location.
    expect(bad.describe()).toMatch(/^plugin\/view: .* \(1:\d+\)\n \| 1 \+\n \| \.*\^$/);
  });

  it("has CoreDNS's expression environment, without template's group()", () => {
    expect(configError(() => parseView(dispenserFor('view x {\n expr group(1)\n}', 'view')), 'group').message).toMatch(
      /^unknown name group \(1:1\)/,
    );
    const v = parseView(
      dispenserFor(
        "view x {\n expr type() in ['A'] && class() == 'IN' && proto() == 'udp' && port() != '' && size() > 0 && id() >= 0 && opcode() == 0 && !do() && bufsize() >= 512 && server_port() != '' && server_ip() != '' && metadata('a/b') == ''\n}",
        'view',
      ),
    );
    expect(v.exprs.length).toBe(1);
  });
});

const SPLIT = `. {
  view one {
    expr incidr(client_ip(), '10.0.0.0/8')
  }
  template IN A {
    answer "{{ .Name }} 60 IN A 1.1.1.1"
  }
}
. {
  view two {
    expr incidr(client_ip(), '192.168.0.0/16')
    expr type() == 'A'
  }
  template IN A {
    answer "{{ .Name }} 60 IN A 2.2.2.2"
  }
}
. {
  template IN A {
    answer "{{ .Name }} 60 IN A 3.3.3.3"
  }
}
`;

describe('view routing', () => {
  it('picks the first block whose view takes the query, else the fallback', async () => {
    const run = await runCorefile(SPLIT);
    try {
      expect(firstA((await run.ask('x.test.', 'A', { remoteAddress: '10.1.2.3' })).answers)).toBe('1.1.1.1');
      expect(firstA((await run.ask('x.test.', 'A', { remoteAddress: '192.168.1.1' })).answers)).toBe('2.2.2.2');
      expect(firstA((await run.ask('x.test.', 'A', { remoteAddress: '127.0.0.1' })).answers)).toBe('3.3.3.3');
    } finally {
      await run.stop();
    }
  });

  it('an expression that is not true, or fails, does not select the block', async () => {
    const run = await runCorefile(`. {
  view num {
    expr 1
  }
  template IN A {
    answer "{{ .Name }} 60 IN A 1.1.1.1"
  }
}
. {
  view err {
    expr incidr(name(), '10.0.0.0/8')
  }
  template IN A {
    answer "{{ .Name }} 60 IN A 2.2.2.2"
  }
}
. {
  template IN A {
    answer "{{ .Name }} 60 IN A 3.3.3.3"
  }
}
`);
    try {
      expect(firstA((await run.ask('x.test.', 'A')).answers)).toBe('3.3.3.3');
    } finally {
      await run.stop();
    }
  });

  it('a zone whose views all refuse falls back to a shorter zone, then the root', async () => {
    const run = await runCorefile(`example.org {
  view inner {
    expr name() == 'in.example.org.'
  }
  template IN A {
    answer "{{ .Name }} 60 IN A 1.1.1.1"
  }
}
. {
  template IN A {
    answer "{{ .Name }} 60 IN A 3.3.3.3"
  }
}
`);
    try {
      expect(firstA((await run.ask('in.example.org.', 'A')).answers)).toBe('1.1.1.1');
      expect(firstA((await run.ask('out.example.org.', 'A')).answers)).toBe('3.3.3.3');
    } finally {
      await run.stop();
    }
  });

  it('with no fallback and no view taking the query, the server answers REFUSED', async () => {
    const run = await runCorefile(`. {
  view only {
    expr client_ip() == '10.0.0.1'
  }
  template IN A {
    answer "{{ .Name }} 60 IN A 1.1.1.1"
  }
}
`);
    try {
      const m = await run.ask('x.test.', 'A');
      expect(m.flags! & 0xf).toBe(5);
    } finally {
      await run.stop();
    }
  });

  it('publishes view/name as metadata with the metadata plugin', async () => {
    const run = await runCorefile(`. {
  view named {
    expr true
  }
  metadata
  template IN TXT {
    answer "{{ .Name }} 60 IN TXT \\"{{ .Meta \\"view/name\\" }}\\""
  }
}
`);
    try {
      const a = (await run.ask('x.test.', 'TXT')).answers?.[0];
      expect(a?.type === 'TXT' ? [a.data].flat().map(String) : []).toEqual(['named']);
    } finally {
      await run.stop();
    }
  });

  it('two blocks without a view on one zone and port are still refused; two views are not', async () => {
    await expect(runCorefile('. {\n whoami\n}\n. {\n whoami\n}\n')).rejects.toThrow(/it is already defined/);
    const run = await runCorefile('. {\n view a\n whoami\n}\n. {\n view b\n whoami\n}\n. {\n whoami\n}\n');
    await run.stop();
    const second = await runCorefile('. {\n view a\n view b\n whoami\n}\n').then(
      () => null,
      (e: unknown) => e,
    );
    expect(second).toBeInstanceOf(ConfigError);
    expect((second as ConfigError).message).toBe('this plugin can only be used once per Server Block');
  });
});
