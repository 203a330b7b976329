import type { GatewayContext } from './context';
import { asGatewayError, GatewayError } from './errors';
import type { GatewayPlugin } from './plugin-contract';
import type { SseEvent } from './usage';

type GatingPhase = 'onRequest' | 'beforeUpstream' | 'onResponse';

/**
 * Runs the plugins' phase hooks in YAML order. Per phase, only the plugins that implement it are kept, so
 * a phase nobody uses costs nothing on the request path.
 */
export class PluginPipeline {
  private readonly gating: Record<GatingPhase, GatewayPlugin[]>;
  private readonly streamObservers: GatewayPlugin[];
  private readonly completers: GatewayPlugin[];

  constructor(readonly plugins: readonly GatewayPlugin[]) {
    const having = (phase: keyof GatewayPlugin) => plugins.filter((p) => typeof p[phase] === 'function');
    this.gating = { onRequest: having('onRequest'), beforeUpstream: having('beforeUpstream'), onResponse: having('onResponse') };
    this.streamObservers = having('onStreamEvent');
    this.completers = having('onComplete');
  }

  /** True when some plugin wants every SSE event. */
  get observesStreams(): boolean {
    return this.streamObservers.length > 0;
  }

  /**
   * A phase that may refuse the request: a GatewayError passes through, anything else becomes plugin_error.
   * Returns a promise only when a hook returned one: when every hook is synchronous (the usual case) the phase
   * costs no promise and no turn of the microtask queue (callers `await` only what they get).
   */
  run(phase: GatingPhase, ctx: GatewayContext): Promise<void> | undefined {
    const hooks = this.gating[phase];
    for (let i = 0; i < hooks.length; i++) {
      let pending: void | Promise<void>;
      try {
        pending = hooks[i][phase]!(ctx);
      } catch (err) {
        throw refusal(err, hooks[i], phase, ctx);
      }
      if (pending !== undefined) return this.finishAsync(pending, i, phase, ctx);
    }
    return undefined;
  }

  /** The rest of a phase once a hook went asynchronous. */
  private async finishAsync(pending: Promise<void>, at: number, phase: GatingPhase, ctx: GatewayContext): Promise<void> {
    const hooks = this.gating[phase];
    for (let i = at; i < hooks.length; i++) {
      try {
        const next = i === at ? pending : hooks[i][phase]!(ctx);
        if (next !== undefined) await next;
      } catch (err) {
        throw refusal(err, hooks[i], phase, ctx);
      }
    }
  }

  streamEvent(ctx: GatewayContext, event: SseEvent): void {
    for (const plugin of this.streamObservers) {
      try {
        plugin.onStreamEvent!(ctx, event);
      } catch (err) {
        ctx.log.error({ err, plugin: plugin.name, phase: 'onStreamEvent' }, 'plugin failed');
      }
    }
  }

  async complete(ctx: GatewayContext): Promise<void> {
    for (const plugin of this.completers) {
      try {
        const pending = plugin.onComplete!(ctx);
        if (pending !== undefined) await pending;
      } catch (err) {
        ctx.log.error({ err, plugin: plugin.name, phase: 'onComplete' }, 'plugin failed');
      }
    }
  }

  /** Shutdown, in reverse order so that a plugin's dependencies close after it. */
  async close(): Promise<void> {
    for (const plugin of [...this.plugins].reverse()) await plugin.close?.();
  }
}

/** A hook's failure as the client sees it; anything but a GatewayError is logged as the plugin's own failure. */
function refusal(err: unknown, plugin: GatewayPlugin, phase: GatingPhase, ctx: GatewayContext): GatewayError {
  if (!(err instanceof GatewayError)) ctx.log.error({ err, plugin: plugin.name, phase }, 'plugin failed');
  return asGatewayError(err, 'plugin_error');
}
