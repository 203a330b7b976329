import { expect } from 'chai';
import { request } from 'undici';
import { TEST_ADMIN_TOKEN, type TestGateway } from './gateway';

/**
 * GET on the admin API with the test admin token; asserts 200 and returns the JSON. Like every admin answer read
 * through undici, it is also checked against the OpenAPI document (admin-contract.ts, installed by root-hooks.ts).
 */
export async function adminGet(gw: TestGateway, path: string): Promise<any> {
  const res = await request(`${gw.adminUrl}${path}`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
  const body = await res.body.json();
  expect(res.statusCode, `${path}: ${JSON.stringify(body)}`).to.equal(200);
  return body;
}

/** Waits until the batched writer has stored `count` records, and returns them (newest first). */
export async function waitForRecords(gw: TestGateway, count: number, timeoutMs = 5000): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const page = await adminGet(gw, '/api/requests?limit=1000');
    if (page.data.length >= count || Date.now() > deadline) return page.data;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A write on the admin API (POST, PATCH, DELETE) with the test admin token: the status and the JSON answer. */
export async function adminSend(
  gw: TestGateway,
  method: 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: object,
): Promise<{ status: number; json: any }> {
  const res = await request(`${gw.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, json: await res.body.json() };
}

/** The first budget of GET /api/budgets once every reservation settled (asserted), within five seconds. */
export async function settledBudget(gw: TestGateway): Promise<any> {
  let budget: any;
  for (let i = 0; i < 100; i++) {
    budget = (await adminGet(gw, '/api/budgets')).data[0];
    if (budget.reserved_usd === '0') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(budget.reserved_usd, 'every reservation settled').to.equal('0');
  return budget;
}
