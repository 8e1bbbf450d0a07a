/**
 * The `on` directive (README.md; CoreDNS 1.15.0 compiles in Caddy's onevent plugin): run a command
 * when the server starts (and after each reload), or when it shuts down. Parsing is Caddy's: the
 * arguments after the event are joined with spaces and split again shell-style (shlex.ts). The
 * commands run in the main thread only (never in a query thread, docs/multicore.md).
 */
import { randomUUID } from 'node:crypto';
import { directive, oneOf, str } from '../../src/corefile/options.js';
import { UnwrappedSetupError } from '../../src/corefile/types.js';
import type { PluginDef } from '../../src/plugin.js';
import { emit, type HookConfig, type OnEvent } from './hook.js';
import { shlexSplit } from './shlex.js';

const EVENTS: readonly OnEvent[] = ['startup', 'shutdown', 'certrenew'];

export const ON_OPTIONS = directive('on', {
  args: { args: [oneOf(EVENTS, 'EVENT'), str('COMMAND')], rest: str('ARGS'), min: 1 },
});

export const on: PluginDef = {
  name: 'on',
  repeat: 'all',
  options: ON_OPTIONS,
  setup(d, ctx) {
    const hooks: HookConfig[] = [];
    // Caddy's errors here are c.Err without plugin.Error: located, with no `plugin/on: ` prefix.
    const fail = (msg: string): UnwrappedSetupError => new UnwrappedSetupError(msg, d.file(), d.line(), 'on');
    while (d.next()) {
      if (!d.nextArg()) {
        const e = d.argErr();
        throw new UnwrappedSetupError(e.message, e.file, e.line, 'on');
      }
      const event = d.val().toLowerCase() as OnEvent;
      if (!EVENTS.includes(event)) throw fail(`Wrong event name or event not supported: '${d.val()}'`);
      const line = d.remainingArgs().join(' ');
      let words: string[];
      try {
        words = shlexSplit(line);
      } catch (e) {
        throw fail(`error parsing command: ${(e as Error).message}`);
      }
      if (words.length === 0) throw fail(`no command contained in '${line}'`);
      hooks.push({ id: randomUUID(), event, command: words[0]!, args: words.slice(1) });
    }
    if (!ctx.process.queryThread) {
      // After the listeners are up (first start) or after the switch (reload), as Caddy's
      // InstanceStartupEvent. A reload runs the new configuration's hooks only, as on SIGUSR1.
      ctx.onServing(() => emit(hooks, 'startup'));
      // Before the listeners close, as Caddy emits ShutdownEvent before its shutdown callbacks.
      ctx.onFinalShutdown(() => emit(hooks, 'shutdown'));
      // certrenew: accepted, never emitted (CoreDNS emits no such event either).
    }
    return null;
  },
};
