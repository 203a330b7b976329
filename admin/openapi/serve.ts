/**
 * GET /api/openapi.json, mounted before the admin token check: the document describes the API and holds nothing
 * of the deployment (no URL, workspace, key or record), so tools (client generators, API explorers) can read it
 * without the token, like the dashboard's static files.
 */
import Router from '@koa/router';
import { adminOpenApiDocument } from './document';

export function openApiRoutes(): Router {
  const router = new Router({ prefix: '/api' });
  let text: string | undefined;
  router.get('/openapi.json', (ctx) => {
    text ??= JSON.stringify(adminOpenApiDocument());
    ctx.type = 'application/json';
    ctx.set('cache-control', 'no-cache');
    ctx.body = text;
  });
  return router;
}
