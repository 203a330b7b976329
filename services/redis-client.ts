import type { Redis, RedisOptions } from 'ioredis';

type IoRedis = typeof import('ioredis');
let ioredis: IoRedis | undefined;

/** ioredis, loaded on first use: it costs ~6 MB of memory, which deployments without Redis need not pay. */
function load(): IoRedis {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded lazily, see above
  return (ioredis ??= require('ioredis') as IoRedis);
}

/** A Redis connection (limits, shared keys); only called when a redis_url is configured. */
export function createRedis(url: string, options: RedisOptions): Redis {
  return new (load().Redis)(url, options);
}

/** True for an error Redis itself answered (a script error...), as opposed to a connection problem. */
export function isReplyError(err: unknown): boolean {
  return ioredis !== undefined && err instanceof ioredis.ReplyError;
}

/** An error Redis answered for one operation of a batch (isReplyError is true for it, like for a failed command). */
export function replyError(message: string): Error {
  return new (load().ReplyError)(message);
}
