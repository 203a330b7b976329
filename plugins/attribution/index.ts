import { z } from 'zod';
import { fromText } from '../../config/from-text';
import type { GatewayContext } from '../../core/context';
import { definePlugin, type GatewayPlugin } from '../../core/plugin';
import { parseTags, type TagLimits } from './parse-tags';

const optionsSchema = z
  .strictObject({
    max_keys: fromText(z.number().int().min(1).max(256)).default(32),
    max_key_length: fromText(z.number().int().min(1).max(256)).default(64),
    max_value_length: fromText(z.number().int().min(1).max(4096)).default(256),
  })
  .prefault({});

/** Turns the metadata headers into the request's tag map (spec, Attribution headers). */
export class AttributionPlugin implements GatewayPlugin {
  readonly name = 'attribution';

  constructor(private readonly limits: TagLimits) {}

  onRequest(ctx: GatewayContext): void {
    Object.assign(ctx.tags, parseTags({ header: (h) => ctx.header(h), names: ctx.headerNames(), timesSent: (h) => ctx.headerCount(h) }, this.limits));
  }
}

export const attribution = definePlugin({
  name: 'attribution',
  optionsSchema,
  create: (_container, o) => new AttributionPlugin({ maxKeys: o.max_keys, maxKeyLength: o.max_key_length, maxValueLength: o.max_value_length }),
});
