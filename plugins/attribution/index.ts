import { BoundedCache, definePlugin, fromText, z, type GatewayContext, type GatewayPlugin } from '../../api';
import { FLAT_PREFIX, METADATA_HEADER, parseTags, type TagLimits } from './parse-tags';

const optionsSchema = z
  .strictObject({
    max_keys: fromText(z.number().int().min(1).max(256)).default(32),
    max_key_length: fromText(z.number().int().min(1).max(256)).default(64),
    max_value_length: fromText(z.number().int().min(1).max(4096)).default(256),
  })
  .prefault({});

/** Turns the metadata headers into the request's tag map (X-Gateway-Metadata and X-Gateway-Metadata-*). */
export class AttributionPlugin implements GatewayPlugin {
  readonly name = 'attribution';

  /**
   * Accepted tag sets by the text of the headers they came from: a client sends the same few on every call, and
   * reading them again (JSON, UTF-8, key rules) was the plugin's whole cost. A refusal is never kept.
   */
  private readonly accepted = new BoundedCache<string, Readonly<Record<string, string>>>(1000);

  constructor(private readonly limits: TagLimits) {}

  onRequest(ctx: GatewayContext): void {
    // The key holds every tag header, name and value ("\n" cannot occur in either); a header sent twice is
    // refused by parseTags, so such a request is never answered from the cache.
    const names = ctx.headerNames();
    const json = ctx.header(METADATA_HEADER);
    let key = json === undefined ? '-' : `+${json}`;
    let repeated = json !== undefined && ctx.headerCount(METADATA_HEADER) > 1;
    for (const name of names) {
      if (!name.startsWith(FLAT_PREFIX)) continue;
      key += `\n${name}\n${ctx.header(name)}`;
      repeated ||= ctx.headerCount(name) > 1;
    }
    let tags = repeated ? undefined : this.accepted.get(key);
    if (!tags) {
      tags = parseTags({ header: (h) => ctx.header(h), names, timesSent: (h) => ctx.headerCount(h) }, this.limits);
      this.accepted.set(key, tags);
    }
    // Key by key: Object.assign from one null-prototype (dictionary) object to another costs several times more.
    const into = ctx.tags;
    for (const k in tags) into[k] = tags[k];
  }
}

export const attribution = definePlugin({
  name: 'attribution',
  optionsSchema,
  create: (_container, o) =>
    new AttributionPlugin({ maxKeys: o.max_keys, maxKeyLength: o.max_key_length, maxValueLength: o.max_value_length }),
});
