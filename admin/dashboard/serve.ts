/**
 * Serves the dashboard's static files on the admin listener: GET / (the page) and GET /assets/*.
 * These files hold no data and no secret, so they are served without the admin token; everything
 * they show comes from /api/*, which the page calls with the token (Authorization: Bearer).
 *
 *   /                      admin/dashboard/web/index.html  (source tree, next to this module's source)
 *   /assets/style.css      admin/dashboard/web/style.css
 *   /assets/<name>.js      the page's TypeScript, compiled by `npm run build` into dist/admin/dashboard/web/
 *   /assets/chart.umd.min.js  Chart.js from node_modules (never a CDN: deployments may have no internet)
 *
 * Files are read once, on the first request, and kept in memory with their gzip form and an ETag.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import type Koa from 'koa';
import type { Logger } from 'pino';

interface Asset {
  body: Buffer;
  gzip: Buffer;
  type: string;
  etag: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** No inline script or style, no third-party origin, no framing; the page only talks to this origin. */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/** Where the files are, relative to this module (dist/admin/dashboard/serve.js when built). */
export function dashboardPaths(moduleDir = __dirname) {
  return {
    /** Hand-written static files (HTML, CSS): read from the source tree. */
    staticDir: resolve(moduleDir, '../../../admin/dashboard/web'),
    /** Compiled page scripts. */
    scriptDir: resolve(moduleDir, 'web'),
    chartJs: join(dirname(require.resolve('chart.js')), 'chart.umd.min.js'),
  };
}

function asset(path: string): Asset {
  const body = readFileSync(path);
  const ext = path.slice(path.lastIndexOf('.'));
  return {
    body,
    gzip: gzipSync(body),
    type: TYPES[ext] ?? 'application/octet-stream',
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
  };
}

function loadAssets(): Map<string, Asset> {
  const { staticDir, scriptDir, chartJs } = dashboardPaths();
  const out = new Map<string, Asset>();
  out.set('/', asset(join(staticDir, 'index.html')));
  for (const name of readdirSync(staticDir))
    if (/\.(css|png|svg)$/.test(name)) out.set(`/assets/${name}`, asset(join(staticDir, name)));
  if (!existsSync(scriptDir)) throw new Error(`dashboard scripts are not built (${scriptDir}): run npm run build`);
  for (const name of readdirSync(scriptDir))
    if (/\.js(\.map)?$/.test(name)) out.set(`/assets/${name}`, asset(join(scriptDir, name)));
  out.set('/assets/chart.umd.min.js', asset(chartJs));
  return out;
}

/**
 * Koa middleware: answers GET/HEAD / and /assets/*, passes everything else on. When the files cannot be read the
 * page says so without their location (the admin listener answers this before any token check); the log has it.
 */
export function dashboardStatic(logger?: Logger): Koa.Middleware {
  let assets: Map<string, Asset> | undefined;
  return async (ctx, next) => {
    const isPage = ctx.path === '/' || ctx.path === '/index.html' || ctx.path.startsWith('/assets/');
    if (!isPage || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    try {
      assets ??= loadAssets();
    } catch (err) {
      ctx.status = 503;
      ctx.type = 'text/plain';
      ctx.body =
        'Tollgate dashboard unavailable: its files could not be read (run npm run build; the gateway log says which).\n';
      logger?.error({ err }, 'dashboard files could not be read');
      return;
    }
    const a = assets.get(ctx.path === '/index.html' ? '/' : ctx.path);
    ctx.set(SECURITY_HEADERS);
    if (!a) {
      ctx.status = 404;
      ctx.type = 'text/plain';
      ctx.body = 'Not found\n';
      return;
    }
    ctx.set('etag', a.etag);
    ctx.vary('accept-encoding');
    if (ctx.get('if-none-match') === a.etag) {
      ctx.status = 304;
      return;
    }
    ctx.type = a.type;
    if (ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
      ctx.set('content-encoding', 'gzip');
      ctx.body = a.gzip;
    } else {
      ctx.body = a.body;
    }
  };
}
