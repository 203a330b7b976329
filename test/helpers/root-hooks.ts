/**
 * Mocha root hooks (loaded through .mocharc.json "require"): the suite-wide secret scan, and the list of the suites
 * skipped for a missing service (helpers/services.ts) said again at the end of the run.
 *
 * Every gateway the test helpers start registers itself (helpers/secret-scan.ts); after the whole run this hook
 * scans every registered gateway's log lines, the admin answers read when it stopped (records, usage, keys,
 * budgets, info) and every file in its data folder (SQLite database and WAL, spill and quarantine files) for the
 * planted secrets and for every gateway key created during the run, and fails the run naming where it found one.
 *
 * Gateway keys created during the run are collected as they are handed out: admin POST /api/keys answers (an
 * undici interceptor on the global dispatcher, observing only those answers), `tollgate keys create` output (an
 * observer on child_process.execFile), the key a first start announces (helpers/gateway.ts, helpers/process.ts)
 * and keys created in the dashboard (the browser test). Anything shaped like a generated key counts too.
 *
 * Focused runs with --no-config load it with: --require dist/test/helpers/root-hooks.js
 */
import childProcess from 'node:child_process';
import { promisify } from 'node:util';
import { DecoratorHandler, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';
import { recordFigures } from './figures';
import { TEST_ADMIN_TOKEN } from './gateway';
import { PLANTED_SECRETS } from './reliability';
import { knownSecrets, rememberGeneratedKeys, rememberSecret, scanAll } from './secret-scan';
import { announce, skippedSuites } from './services';

for (const s of PLANTED_SECRETS) rememberSecret(s, 'planted secret');

// ---------------------------------------------------------------- admin POST /api/keys answers

/** undici's DecoratorHandler (what its own interceptors extend): its typings only list the older handler methods. */
interface ResponseHandler {
  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: any, statusMessage?: string): void;
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void;
  onResponseEnd(controller: Dispatcher.DispatchController, trailers: any): void;
}
const Decorator = DecoratorHandler as unknown as new (handler: Dispatcher.DispatchHandler) => ResponseHandler & Dispatcher.DispatchHandler;

/** Keeps the body of a 201 answer to POST /api/keys (the one place a new key is handed out) and passes it on unchanged. */
class KeyAnswerObserver extends Decorator {
  private status = 0;
  private readonly chunks: Buffer[] = [];

  override onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: any, statusMessage?: string): void {
    this.status = statusCode;
    return super.onResponseStart(controller, statusCode, headers, statusMessage);
  }

  override onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.status === 201) this.chunks.push(Buffer.from(chunk));
    return super.onResponseData(controller, chunk);
  }

  override onResponseEnd(controller: Dispatcher.DispatchController, trailers: any): void {
    if (this.chunks.length) rememberGeneratedKeys(Buffer.concat(this.chunks).toString('utf8'), 'a key created through POST /api/keys');
    return super.onResponseEnd(controller, trailers);
  }
}

const createsKey = (opts: Dispatcher.DispatchOptions) => opts.method === 'POST' && /\/api\/keys\/?(?:\?|$)/.test(opts.path);
setGlobalDispatcher(getGlobalDispatcher().compose((dispatch) => (opts, handler) => dispatch(opts, createsKey(opts) ? new KeyAnswerObserver(handler) : handler)));

// ---------------------------------------------------------------- `tollgate keys create` output

const isKeysCreate = (args: unknown[]) => Array.isArray(args[1]) && args[1].includes('keys') && args[1].includes('create');
const cp = childProcess as unknown as Record<string, any>;
const execFile = cp.execFile;
const observedExecFile = function (this: unknown, ...args: unknown[]) {
  const child = execFile.apply(this, args);
  if (isKeysCreate(args)) {
    let out = '';
    child.stdout?.on('data', (d: Buffer | string) => (out += d.toString()));
    child.once('close', () => rememberGeneratedKeys(out, 'a key created with `tollgate keys create`'));
  }
  return child;
} as any;
observedExecFile[promisify.custom] = (...args: unknown[]) => {
  const promise = execFile[promisify.custom](...args);
  if (isKeysCreate(args)) promise.then((r: { stdout: unknown }) => rememberGeneratedKeys(String(r.stdout), 'a key created with `tollgate keys create`'), () => undefined);
  return promise; // unchanged (it carries .child)
};
cp.execFile = observedExecFile;

// ---------------------------------------------------------------- the scan

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(180_000);
    // Said again at the end, where a reader of the run looks, not only where each suite was skipped.
    if (skippedSuites.length) announce(`SKIPPED in this run: ${skippedSuites.length} suite(s)\n${skippedSuites.map((s) => `  - ${s}`).join('\n')}`);
    const started = Date.now();
    const { findings, stats } = await scanAll(TEST_ADMIN_TOKEN);
    const created = knownSecrets().length - PLANTED_SECRETS.length;
    const summary = `secret scan of the whole run: ${stats.gateways} gateways, ${stats.logLines} log lines, ${stats.adminAnswers} admin answers (${stats.records} records), ` +
      `${stats.files} files at rest (${(stats.bytes / 2 ** 20).toFixed(1)} MB), ${PLANTED_SECRETS.length} planted secrets + ${created} gateway keys created during the run ` +
      `+ anything shaped like a generated key (${Date.now() - started} ms)`;
    if (stats.snapshotProblems.length) {
      process.stdout.write(`\n  (secret scan: the admin answers of ${stats.snapshotProblems.length} gateway(s) could not all be read when they stopped; their logs and files were scanned: ${stats.snapshotProblems.slice(0, 3).join(' | ')})\n`);
    }
    recordFigures('secret-scan', 'last-run', { ...stats, snapshotProblems: stats.snapshotProblems.length, gateway_keys_created: created, found: findings.length });
    if (findings.length === 0) {
      process.stdout.write(`\n  ${summary}: none found\n`);
      return;
    }
    const lines = findings.slice(0, 30).map((f) => `  - ${f.secret} in ${f.where}, line ${f.line}: ${f.excerpt}`);
    const bar = '!'.repeat(100);
    const message = `SECRET LEAK: ${findings.length} occurrence(s) of a secret in what the gateways wrote\n${lines.join('\n')}${findings.length > 30 ? `\n  ... and ${findings.length - 30} more` : ''}`;
    process.stdout.write(`\n${bar}\n${message}\n${bar}\n  (${summary})\n`);
    throw new Error(message);
  },
};
