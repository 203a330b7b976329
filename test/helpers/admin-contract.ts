/**
 * Checks admin API answers against the OpenAPI document (admin/openapi): status documented for the operation,
 * the media type it documents, required headers, and the body against its JSON Schema (ajv, draft 2020-12, with
 * formats such as date-time). An answer to a path the document does not have must be an error in the gateway's
 * error shape.
 *
 * observeAdminAnswers() puts the check on undici's global dispatcher, so every admin answer any test reads
 * (adminGet, the reliability helpers, the secret scan's snapshots, a test's own request()) is checked. An answer
 * that does not match fails where its body is read, with the mismatch as the error; the root hooks
 * (root-hooks.ts) fail the run at its end listing every mismatch and the test that read it, so one whose body
 * was never read (or whose error a helper caught) is not lost.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Dispatcher } from 'undici';
import { adminOpenApiDocument } from '../../admin/openapi/document';
import { observeAnswers, type ObservedAnswer } from './answer-observer';
import { registeredGateways } from './secret-scan';

export interface AdminAnswer extends ObservedAnswer {
  method: string;
  /** Path and query, as sent. */
  path: string;
}

export interface ContractCheck {
  /** "GET /api/usage 200", or "unknown route 404" for a path the document does not have. */
  answer: string;
  problems: string[];
}

type Json = Record<string, any>;
const DOC_ID = 'tollgate-admin-openapi';
/** Top-level OpenAPI fields: known to ajv as keywords without validation, so that it accepts the document as a schema to point into. */
const OPENAPI_FIELDS = [
  'openapi',
  'info',
  'jsonSchemaDialect',
  'servers',
  'paths',
  'webhooks',
  'components',
  'security',
  'tags',
  'externalDocs',
];
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export class AdminContract {
  readonly doc: Json;
  private readonly ajv: Ajv2020;
  private readonly routes: { template: string; pattern: RegExp }[];
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(doc: Json = adminOpenApiDocument()) {
    this.doc = doc;
    this.ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addVocabulary(OPENAPI_FIELDS);
    this.ajv.addSchema(doc, DOC_ID);
    this.routes = Object.keys(doc.paths).map((template) => ({
      template,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
    }));
  }

  /** Every schema of the document, compiled (strict mode: an unknown keyword or a bad pattern throws). */
  compileAll(): number {
    let n = 0;
    for (const id of Object.keys(this.doc.components.schemas)) (this.schema(pointer('components', 'schemas', id)), n++);
    for (const { where, response } of this.responses()) {
      for (const mediaType of Object.keys(response.content ?? {}))
        (this.schema(pointer(...where, 'content', mediaType, 'schema')), n++);
      for (const name of Object.keys(response.headers ?? {}))
        (this.schema(pointer(...where, 'headers', name, 'schema')), n++);
    }
    return n;
  }

  /** "METHOD /path" of every operation, paths as the document writes them (/api/keys/{id}). */
  operations(): string[] {
    return Object.entries(this.doc.paths as Json).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => METHODS.includes(m))
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
  }

  /** "METHOD /path STATUS" of every answer the document describes. */
  documentedAnswers(): string[] {
    return Object.entries(this.doc.paths as Json).flatMap(([path, item]) =>
      Object.entries(item as Json)
        .filter(([m]) => METHODS.includes(m))
        .flatMap(([m, op]) => Object.keys(op.responses).map((status) => `${m.toUpperCase()} ${path} ${status}`)),
    );
  }

  check(a: AdminAnswer): ContractCheck {
    const path = a.path.split('?')[0];
    const method = a.method.toUpperCase();
    const route = this.routes.find((r) => r.pattern.test(path));
    const operation = route && this.doc.paths[route.template][method === 'HEAD' ? 'get' : method.toLowerCase()];
    if (!operation) return { answer: `unknown route ${a.status}`, problems: this.checkUnknownRoute(a) };
    const answer = `${method} ${route.template} ${a.status}`;
    let where = [
      'paths',
      route.template,
      method === 'HEAD' ? 'get' : method.toLowerCase(),
      'responses',
      String(a.status),
    ];
    let response = operation.responses[String(a.status)];
    if (!response)
      return { answer, problems: [`status ${a.status} is not documented for ${method} ${route.template}`] };
    if (response.$ref) {
      where = (response.$ref as string).slice(2).split('/');
      response = where.reduce((o: Json, k) => o[k], this.doc);
    }
    const problems: string[] = [];
    for (const [name, header] of Object.entries((response.headers ?? {}) as Json)) {
      const value = a.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required) problems.push(`header ${name} is missing`);
        continue;
      }
      problems.push(...this.validate(pointer(...where, 'headers', name, 'schema'), value, `header ${name}`));
    }
    if (method === 'HEAD') return { answer, problems };
    const mediaType = String(a.headers['content-type'] ?? '')
      .split(';')[0]
      .trim()
      .toLowerCase();
    const content = (response.content ?? {}) as Json;
    if (Object.keys(content).length === 0) {
      if (a.body !== '') problems.push('the document gives no body for this answer, but it has one');
      return { answer, problems };
    }
    if (!(mediaType in content))
      return {
        answer,
        problems: [...problems, `content-type "${mediaType}" is not documented (${Object.keys(content).join(', ')})`],
      };
    problems.push(...this.validateBody(pointer(...where, 'content', mediaType, 'schema'), mediaType, a.body));
    return { answer, problems };
  }

  /** A path the document does not have: the admin API answers it with an error (401 first, else 404 route_not_found). */
  private checkUnknownRoute(a: AdminAnswer): string[] {
    if (a.status < 400)
      return [`${a.method} ${a.path.split('?')[0]} answered ${a.status}, but the document has no such operation`];
    return this.validateBody(
      pointer('components', 'schemas', 'Error'),
      String(a.headers['content-type'] ?? '')
        .split(';')[0]
        .trim(),
      a.body,
    );
  }

  private validateBody(at: string, mediaType: string, body: string): string[] {
    if (mediaType !== 'application/json') return this.validate(at, body, 'body');
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return [`the body is not JSON: ${body.slice(0, 120)}`];
    }
    return this.validate(at, value, 'body');
  }

  private validate(at: string, value: unknown, what: string): string[] {
    const validate = this.schema(at);
    if (validate(value)) return [];
    return (validate.errors ?? [])
      .slice(0, 8)
      .map(
        (e) =>
          `${what}${e.instancePath || ''} ${e.message}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''}`,
      );
  }

  private schema(at: string): ValidateFunction {
    let v = this.validators.get(at);
    if (!v) this.validators.set(at, (v = this.ajv.compile({ $ref: `${DOC_ID}#/${at}` })));
    return v;
  }

  private *responses(): Generator<{ where: string[]; response: Json }> {
    for (const [name, response] of Object.entries(this.doc.components.responses as Json))
      yield { where: ['components', 'responses', name], response };
    for (const [path, item] of Object.entries(this.doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        if (!METHODS.includes(method)) continue;
        for (const [status, response] of Object.entries(op.responses as Json))
          if (!response.$ref) yield { where: ['paths', path, method, 'responses', status], response };
      }
    }
  }
}

// ---------------------------------------------------------------- every admin answer the tests read

export interface ContractViolation {
  answer: string;
  request: string;
  problems: string[];
  /** The test (or hook) running when it arrived. */
  during: string;
}

let contract: AdminContract | undefined;
const seen = new Map<string, number>();
let pending: ContractViolation[] = [];
let running = '(outside any test)';

/** Names the test now running, for the report of mismatches. */
export function adminAnswersDuring(title: string): void {
  running = title;
}

/** Answers checked so far, by "METHOD /path STATUS". */
export function checkedAdminAnswers(): ReadonlyMap<string, number> {
  return seen;
}

/** Mismatches since the last call (and forgets them). */
export function takeContractViolations(): ContractViolation[] {
  const out = pending;
  pending = [];
  return out;
}

export function recordAdminAnswer(a: AdminAnswer): ContractCheck {
  contract ??= new AdminContract();
  const result = contract.check(a);
  seen.set(result.answer, (seen.get(result.answer) ?? 0) + 1);
  if (result.problems.length)
    pending.push({
      answer: result.answer,
      request: `${a.method} ${a.path.slice(0, 200)}`,
      problems: result.problems,
      during: running,
    });
  return result;
}

export function contractError(violations: readonly ContractViolation[]): Error {
  const lines = violations
    .slice(0, 20)
    .map((v) => `  - ${v.request} (${v.answer}), during "${v.during}": ${v.problems.join('; ')}`);
  const more = violations.length > 20 ? `\n  ... and ${violations.length - 20} more` : '';
  const error = new Error(
    `${violations.length} admin answer(s) do not match the OpenAPI document (admin/openapi):\n${lines.join('\n')}${more}`,
  );
  error.stack = `Error: ${error.message}`; // undici's frames would only hide what matters: the answer and the test
  return error;
}

/** Whether a request goes to the admin API (/api/..., the probes and /metrics; not the dashboard's static files) of a gateway the helpers started. */
function isAdminApi(opts: Dispatcher.DispatchOptions): boolean {
  if (!opts.origin || !/^\/(?:api(?:[/?]|$)|(?:healthz|readyz|metrics)(?:\?|$))/.test(opts.path)) return false;
  const origin = new URL(String(opts.origin)).origin;
  const at = (url: string | undefined) => url !== undefined && new URL(url).origin === origin;
  // The port is the newest gateway's to use it: an earlier gateway's admin port may now be a later one's proxy.
  const newest = [...registeredGateways()].reverse().find((g) => at(g.adminUrl) || at(g.proxyUrl));
  return newest !== undefined && at(newest.adminUrl);
}

/** Checks every answer from a registered gateway's admin listener read through undici from now on. */
export function observeAdminAnswers(): void {
  observeAnswers(isAdminApi, (opts, answer) => {
    const { answer: kind, problems } = recordAdminAnswer({ method: opts.method, path: opts.path, ...answer });
    if (problems.length)
      return contractError([
        { answer: kind, request: `${opts.method} ${opts.path.slice(0, 200)}`, problems, during: running },
      ]);
  });
}
