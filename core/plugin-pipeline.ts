import type { GatewayContext } from './context';
import { asGatewayError, type GatewayError } from './errors';
import type { GatewayPlugin } from './plugin-contract';
import type { SseEvent } from './usage';

type GatingPhase = 'onRequest' | 'beforeUpstream' | 'onResponse';

/** A gating phase's hooks, with each plugin's place in the list and where the phase counts admission from. */
interface Phase {
  readonly name: GatingPhase;
  readonly hooks: readonly GatewayPlugin[];
  readonly at: readonly number[];
  /** onRequest and beforeUpstream are admission: how far they got decides whose onComplete runs. */
  readonly admissionBase: number | undefined;
}

/** A plugin with onComplete, and the admission hooks it has (it completes only a request that reached one). */
interface Completer {
  readonly plugin: GatewayPlugin;
  readonly at: number;
  readonly onRequest: boolean;
  readonly beforeUpstream: boolean;
}

/**
 * Runs the plugins' phase hooks; per phase, only the plugins that implement it are kept, so a phase nobody uses
 * costs nothing on the request path.
 *
 * Admission (onRequest, then beforeUpstream) runs in YAML order. The response side mirrors it, as Bifrost's post
 * hooks do: onResponse, onStreamEvent and onComplete run in reverse order, so the plugin listed first sees the
 * answer last, after every plugin listed after it. onComplete runs only for the plugins whose admission hook ran
 * (the one that refused included); a plugin with neither observes every request. So a plugin undoes only what it
 * did. (onResponse and onStreamEvent run only for a request that went upstream, which every plugin admitted.)
 */
export class PluginPipeline {
  private readonly phases: Record<GatingPhase, Phase>;
  private readonly streamObservers: GatewayPlugin[];
  private readonly completers: Completer[];
  /** How far each request's admission got: private to the pipeline, it decides whose onComplete runs. */
  private readonly admission = new WeakMap<GatewayContext, number>();

  constructor(readonly plugins: readonly GatewayPlugin[]) {
    const n = plugins.length;
    const phase = (name: GatingPhase, admissionBase: number | undefined): Phase => {
      const at = plugins.flatMap((p, i) => (typeof p[name] === 'function' ? [i] : []));
      if (admissionBase === undefined) at.reverse(); // the response side runs in reverse
      return { name, hooks: at.map((i) => plugins[i]), at, admissionBase };
    };
    // Admission is one number: onRequest's progress in 0..n, then beforeUpstream's in n+1..2n+1.
    this.phases = {
      onRequest: phase('onRequest', 0),
      beforeUpstream: phase('beforeUpstream', n + 1),
      onResponse: phase('onResponse', undefined),
    };
    this.streamObservers = plugins.filter((p) => typeof p.onStreamEvent === 'function').reverse();
    this.completers = plugins
      .map((plugin, at) => ({
        plugin,
        at,
        onRequest: typeof plugin.onRequest === 'function',
        beforeUpstream: typeof plugin.beforeUpstream === 'function',
      }))
      .filter((c) => typeof c.plugin.onComplete === 'function')
      .reverse();
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
  run(name: GatingPhase, ctx: GatewayContext): Promise<void> | undefined {
    const phase = this.phases[name];
    for (let i = 0; i < phase.hooks.length; i++) {
      const pending = this.call(phase, i, ctx);
      if (pending !== undefined) return this.finishAsync(phase, i, pending, ctx);
    }
    if (phase.admissionBase !== undefined) this.admission.set(ctx, phase.admissionBase + this.plugins.length);
    return undefined;
  }

  /** The rest of a phase once a hook went asynchronous. */
  private async finishAsync(phase: Phase, at: number, pending: Promise<void>, ctx: GatewayContext): Promise<void> {
    for (let i = at; i < phase.hooks.length; i++) {
      const next = i === at ? pending : this.call(phase, i, ctx);
      try {
        if (next !== undefined) await next;
      } catch (err) {
        throw this.refused(phase, i, err, ctx);
      }
    }
    if (phase.admissionBase !== undefined) this.admission.set(ctx, phase.admissionBase + this.plugins.length);
  }

  /** The one place a gating hook is called; a synchronous failure is turned into the refusal here. */
  private call(phase: Phase, i: number, ctx: GatewayContext): void | Promise<void> {
    try {
      return phase.hooks[i][phase.name]!(ctx);
    } catch (err) {
      throw this.refused(phase, i, err, ctx);
    }
  }

  /** A hook's failure as the client sees it; anything but a GatewayError is logged as the plugin's own failure. */
  private refused(phase: Phase, i: number, err: unknown, ctx: GatewayContext): GatewayError {
    if (phase.admissionBase !== undefined) this.admission.set(ctx, phase.admissionBase + phase.at[i]);
    const error = asGatewayError(err, 'plugin_error');
    if (error !== err) ctx.log.error({ err, plugin: phase.hooks[i].name, phase: phase.name }, 'plugin failed');
    return error;
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

  /** onComplete, in reverse order, for the plugins the request reached (every plugin with `everyPlugin`, for tests). */
  async complete(ctx: GatewayContext, everyPlugin = false): Promise<void> {
    await this.completeNow(ctx, everyPlugin);
  }

  /**
   * complete(), returning a promise only when an onComplete hook returned one (each is awaited before the next):
   * when every hook is synchronous, ending a request costs no promise. A hook's failure is logged, never thrown.
   */
  completeNow(ctx: GatewayContext, everyPlugin = false): Promise<void> | undefined {
    const admission = everyPlugin ? Infinity : (this.admission.get(ctx) ?? -1);
    for (let i = 0; i < this.completers.length; i++) {
      const pending = this.completeOne(this.completers[i], ctx, admission);
      if (pending) return this.completeRest(pending, i + 1, ctx, admission);
    }
    return undefined;
  }

  private async completeRest(pending: Promise<void>, from: number, ctx: GatewayContext, admission: number) {
    await pending;
    for (let i = from; i < this.completers.length; i++) {
      const next = this.completeOne(this.completers[i], ctx, admission);
      if (next) await next;
    }
  }

  /** One plugin's onComplete, when the request reached it (admission Infinity: every plugin). */
  private completeOne(c: Completer, ctx: GatewayContext, admission: number): Promise<void> | undefined {
    if (admission !== Infinity && !this.reached(c, admission)) return undefined;
    let pending: Promise<void> | void;
    try {
      pending = c.plugin.onComplete!(ctx);
    } catch (err) {
      completeFailed(c, ctx, err);
      return undefined;
    }
    return pending ? pending.then(undefined, (err: unknown) => completeFailed(c, ctx, err)) : undefined;
  }

  /** Whether one of the plugin's admission hooks ran (or it has none, and observes every request). */
  private reached(c: Completer, admission: number): boolean {
    if (!c.onRequest && !c.beforeUpstream) return true;
    const n = this.plugins.length;
    return (c.onRequest && c.at <= admission) || (c.beforeUpstream && admission > n && c.at <= admission - n - 1);
  }

  /** Shutdown, in reverse order so that a plugin's dependencies close after it. */
  async close(): Promise<void> {
    for (const plugin of [...this.plugins].reverse()) await plugin.close?.();
  }
}

function completeFailed(c: Completer, ctx: GatewayContext, err: unknown): void {
  ctx.log.error({ err, plugin: c.plugin.name, phase: 'onComplete' }, 'plugin failed');
}
