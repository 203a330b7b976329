/**
 * The Tollgate dashboard: a login form, then its views (Usage, Requests, Latency & errors, Budgets, Statements,
 * Reconciliation, API Keys) over the admin API.
 * Served by the gateway's admin listener; all data comes from /api/* with the admin token.
 */
import { api, ApiError, AuthError, clearToken, getToken, setToken, type InfoJson } from './api.js';
import type { AppCtx, ViewName } from './context.js';
import { h, replace } from './dom.js';
import { destroyChart } from './chart.js';
import { forgetCreatedKey, renderKeys } from './keys.js';
import { loadKeyNames } from './key-names.js';
import { renderRequests } from './requests.js';
import { renderLatency } from './latency.js';
import { renderBudgets } from './budgets.js';
import { renderStatement } from './statement.js';
import { renderReconciliation } from './reconciliation.js';
import { dimensionChoices, loadState, saveState, type ViewState } from './state.js';
import { renderUsage } from './usage.js';

const app = document.getElementById('app')!;
const VIEWS: { id: ViewName; label: string }[] = [
  { id: 'usage', label: 'Usage' },
  { id: 'requests', label: 'Requests' },
  { id: 'latency', label: 'Latency & errors' },
  { id: 'budgets', label: 'Budgets' },
  { id: 'statement', label: 'Statements' },
  { id: 'reconciliation', label: 'Reconciliation' },
  { id: 'keys', label: 'API Keys' },
];

function currentView(): ViewName {
  const v = location.hash.replace(/^#\/?/, '');
  return VIEWS.some((x) => x.id === v) ? (v as ViewName) : 'usage';
}

function showLogin(message?: string): void {
  destroyChart();
  forgetCreatedKey();
  const input = h('input', {
    type: 'password',
    id: 'token',
    autocomplete: 'current-password',
    required: true,
    placeholder: 'TOLLGATE_ADMIN_TOKEN',
    'aria-label': 'Admin token',
  });
  const error = h('p', { class: 'error', id: 'login-error', role: 'alert' }, message ?? '');
  const button = h('button', { type: 'submit', class: 'btn primary wide' }, 'Sign in');
  // No name on the input and no GET submission: the token can never end up in a URL.
  const form = h(
    'form',
    { class: 'login-card', id: 'login', method: 'post', action: '#' },
    h('div', { class: 'brand big' }, h('span', { class: 'logo' }, '◆'), ' Tollgate'),
    h(
      'p',
      { class: 'muted' },
      'Sign in with the admin token (',
      h('code', {}, 'admin.token'),
      ' in gateway.config.yaml, usually ',
      h('code', {}, 'TOLLGATE_ADMIN_TOKEN'),
      '). It is kept in this browser tab only and sent as a Bearer header.',
    ),
    input,
    error,
    button,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const token = input.value.trim();
    if (!token) return;
    button.disabled = true;
    error.textContent = '';
    try {
      const info = await api.info(token);
      setToken(token);
      await start(info);
    } catch (err) {
      error.textContent =
        err instanceof AuthError ? 'That token was refused.' : `Cannot reach the admin API: ${(err as Error).message}`;
      button.disabled = false;
      input.select();
    }
  });
  replace(app, h('main', { class: 'login' }, form));
  input.focus();
}

function emptyState(info: InfoJson, ctx: AppCtx): HTMLElement {
  let base = info.proxy_url ?? `${location.protocol}//${location.hostname}:8080`;
  // A proxy bound to every interface is reached at this page's host name.
  base = base.replace(/\/\/(0\.0\.0\.0|\[::\])(?=:)/, `//${location.hostname}`);
  const curl = [
    `curl ${base}/v1/chat/completions \\`,
    `  -H "X-Gateway-Key: $TOLLGATE_KEY" \\`,
    `  -H "Authorization: Bearer $OPENAI_API_KEY" \\`,
    `  -H 'X-Gateway-Metadata: {"agent":"my-agent","feature":"hello"}' \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello"}]}'`,
  ].join('\n');
  return h(
    'section',
    { class: 'panel empty-state', id: 'empty-state' },
    h('h2', {}, 'No requests recorded yet'),
    h(
      'p',
      {},
      'Tollgate records the cost of every request that goes through its proxy. Send a first one and it appears here:',
    ),
    h(
      'ol',
      {},
      h(
        'li',
        {},
        'Get a gateway key: ',
        h('a', { href: '#/keys' }, 'create one under API Keys'),
        ' (or use the key Tollgate printed at its first start).',
      ),
      h(
        'li',
        {},
        'Point your client at the proxy. Base URL ',
        h('code', { id: 'proxy-base' }, `${base}/v1`),
        ' (OpenAI SDK and compatible) or ',
        h('code', {}, base),
        ' (Anthropic SDK), with these headers:',
        h(
          'ul',
          {},
          h('li', {}, h('code', {}, 'X-Gateway-Key: <your gateway key>')),
          h(
            'li',
            {},
            h('code', {}, 'Authorization: Bearer <your provider key>'),
            ' (or ',
            h('code', {}, 'x-api-key'),
            ' for Anthropic): forwarded, never stored',
          ),
          h(
            'li',
            {},
            h('code', {}, 'X-Gateway-Metadata: {"agent":"…","feature":"…","customer_id":"…"}'),
            ': optional tags to group the cost by',
          ),
        ),
      ),
      h('li', {}, 'For example with curl:', h('pre', {}, curl)),
    ),
    h('button', { type: 'button', class: 'btn primary', onclick: () => ctx.update({}) }, 'Check again'),
  );
}

async function start(initialInfo?: InfoJson): Promise<void> {
  const [info, dims] = await Promise.all([initialInfo ? Promise.resolve(initialInfo) : api.info(), api.dimensions()]);
  const state: ViewState = loadState();
  const choices = dimensionChoices(dims.builtin, dims.tags);
  if (!choices.includes(state.groupBy)) state.groupBy = dims.tags.includes('agent') ? 'agent' : 'model';

  const { nav, content, toast } = showShell();
  let seq = 0;
  const ctx = appContext({ state, dims: choices, info }, toast, () => void render());
  async function render(): Promise<void> {
    const mine = ++seq;
    await renderView(ctx, nav, content, () => mine === seq && app.contains(content));
  }

  window.onhashchange = () => {
    // A key shown once is gone as soon as the view changes: coming back never shows it again.
    forgetCreatedKey();
    void render();
  };
  await render();
}

/** The top bar (brand, view tabs, sign out), the view's place and the toast; returns the parts the views fill. */
function showShell(): { nav: HTMLElement; content: HTMLElement; toast: HTMLElement } {
  const nav = h('nav', { class: 'tabs' });
  const content = h('main', { class: 'content', id: 'view' });
  const toast = h('div', { class: 'toast hidden', role: 'alert', id: 'toast' });
  const logout = h(
    'button',
    {
      type: 'button',
      class: 'btn small ghost',
      id: 'logout',
      onclick: () => {
        clearToken();
        showLogin('Signed out.');
      },
    },
    'Sign out',
  );
  replace(
    app,
    h(
      'header',
      { class: 'topbar' },
      h('div', { class: 'brand' }, h('span', { class: 'logo' }, '◆'), ' Tollgate'),
      nav,
      h('span', { class: 'spacer' }),
      logout,
    ),
    content,
    toast,
  );
  return { nav, content, toast };
}

/** What the views share: the view state (saved on each update, which re-renders), and how an error is shown. */
function appContext(
  initial: Pick<AppCtx, 'state' | 'dims' | 'info'>,
  toast: HTMLElement,
  rerender: () => void,
): AppCtx {
  const { state } = initial;
  return {
    ...initial,
    update(patch) {
      Object.assign(state, patch);
      saveState(state);
      rerender();
    },
    navigate(view) {
      location.hash = `#/${view}`;
    },
    fail(err) {
      if (err instanceof AuthError) {
        clearToken();
        showLogin('The admin token was refused: sign in again.');
        return;
      }
      toast.textContent =
        err instanceof ApiError
          ? `The admin API said: ${err.message}`
          : `Something went wrong: ${(err as Error).message}`;
      toast.classList.remove('hidden');
      setTimeout(() => toast.classList.add('hidden'), 6000);
    },
  };
}

/** Marks the current tab and renders the view of the URL into `content`, timing it; `isCurrent` turns false once
 * a newer render has started, so a slow answer never overwrites a newer view. */
async function renderView(
  ctx: AppCtx,
  nav: HTMLElement,
  content: HTMLElement,
  isCurrent: () => boolean,
): Promise<void> {
  const started = performance.now();
  const view = currentView();
  replace(
    nav,
    VIEWS.map((v) =>
      h('a', { href: `#/${v.id}`, class: v.id === view ? 'active' : '', dataset: { view: v.id } }, v.label),
    ),
  );
  content.dataset.view = view;
  content.dataset.ready = 'false';
  if (view !== 'usage') destroyChart();
  try {
    await loadView(ctx, view, content, isCurrent);
  } catch (err) {
    if (isCurrent()) ctx.fail(err);
  } finally {
    if (isCurrent()) {
      // How long the view took, from asking to shown (read by the browser tests and the dashboard bench).
      content.dataset.renderMs = (performance.now() - started).toFixed(1);
      content.dataset.ready = 'true';
    }
  }
}

async function loadView(ctx: AppCtx, view: ViewName, content: HTMLElement, isCurrent: () => boolean): Promise<void> {
  if (view !== 'keys' && view !== 'budgets' && !ctx.info.has_records) {
    // Nothing recorded yet: ask again (cheap), so the page moves on as soon as a first request is in.
    ctx.info = await api.info();
    if (!ctx.info.has_records) {
      if (isCurrent()) replace(content, emptyState(ctx.info, ctx));
      return;
    }
  }
  // Keys show by their labels in groupings and filters (read once, then from memory).
  if (view !== 'keys') await loadKeyNames();
  if (view === 'usage') {
    // New tag keys show up in the picker as soon as they are in the data (a few index seeks).
    const dims = await api.dimensions();
    ctx.dims = dimensionChoices(dims.builtin, dims.tags);
  }
  if (view === 'usage') await renderUsage(content, ctx, isCurrent);
  else if (view === 'requests') await renderRequests(content, ctx, isCurrent);
  else if (view === 'latency') await renderLatency(content, ctx, isCurrent);
  else if (view === 'budgets') await renderBudgets(content, ctx, isCurrent);
  else if (view === 'statement') await renderStatement(content, ctx, isCurrent);
  else if (view === 'reconciliation') await renderReconciliation(content, ctx, isCurrent);
  else await renderKeys(content, ctx, isCurrent);
}

async function boot(): Promise<void> {
  if (!getToken()) return showLogin();
  try {
    await start();
  } catch (err) {
    if (err instanceof AuthError) {
      clearToken();
      showLogin();
    } else {
      showLogin(`Cannot reach the admin API: ${(err as Error).message}`);
    }
  }
}

void boot();
