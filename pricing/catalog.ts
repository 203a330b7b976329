/**
 * The price catalog: the bundled pricing/catalog.json plus the deployment's overrides (pricing: block).
 *
 * Precedence: bundled < the imported catalog (`tollgate prices update`, imported-catalog.ts) < the provider modules'
 * own prices < litellm_file < models overrides; an override replaces ALL price fields of an entry (a partial merge
 * could pair a negotiated input price with a stale cache price; only the import keeps the bundled rates it has none
 * for) and keeps its metadata (kind, context window, aliases) unless given. Discounts are applied last, by the
 * provider that bills the request, exactly (decimal multiplication by 1 - discount).
 *
 * lookup() matching, first hit wins, nothing fuzzy:
 *   1. exact (provider, id);
 *   2. an alias listed in the catalog (LiteLLM same-price keys, e.g. gpt-4o-2024-08-06 -> gpt-4o);
 *   3. the provider's own prefix removed (gemini/gemini-2.5-pro, models/gemini-2.5-pro, groq/llama-...);
 *   4. a dated snapshot (-YYYY-MM-DD, -YYYYMMDD, -MMDD, -preview-MM-DD; match.ts) -> its family id, unless the
 *      catalog lists the dated id as priced differently (gpt-4o-2024-05-13);
 *   5. provider openrouter only: the vendor's own price for "vendor/model" (dots -> dashes for Anthropic),
 *      marked match.via = 'openrouter_vendor_fallback'; never for ":variant" slugs.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { bundledCatalog } from './bundled-catalog';
import { normalizeProviderSlug, pricingConfigSchema, type ModelOverride, type PricingConfig } from './config';
import { mulDecimal, subDecimal } from './decimal';
import { discounted, PRICE_FIELDS, samePrices } from './entry-prices';
import type { ImportedCatalog } from './imported-catalog';
import { importLiteLlm } from './litellm';
import { openRouterVendorIds, stripOwnPrefix, undatedId } from './match';
import { bundledCorrections, correctedImport } from './price-corrections';
import { DatedPrices, isDated, type DatedPrice } from './dated-prices';
import type { CatalogFile, CatalogModel, MatchRule, ModelPrice, SkippedEntry, ToolFee } from './model-price';

export interface PriceCatalogOptions {
  /** Directory that a relative pricing.litellm_file is resolved against (the config file's directory). */
  baseDir?: string;
  /** Replaces the bundled catalog (tests). */
  bundled?: CatalogFile;
  /** Prices the deployed provider modules declare (ProviderModule.prices): above the imported ones, below the rest. */
  providerPrices?: readonly ModelOverride[];
  /** The catalog `tollgate prices update` wrote (pricing.catalog_file): above the bundled one, below the rest. */
  imported?: ImportedCatalog;
}

interface Entry {
  price: CatalogModel;
  origin: ModelPrice['origin'];
}

/** Where an override's prices come from, for the entry's source note. */
const SOURCE_OF: Record<Exclude<Entry['origin'], 'bundled'>, string> = {
  imported: 'the imported catalog (tollgate prices update)',
  provider: 'the provider module',
  litellm: 'pricing.litellm_file',
  override: 'pricing.models',
};

/** Whose entry an override replaced, for the entry's source note. */
const REPLACED_ENTRY: Partial<Record<Entry['origin'], string>> = {
  provider: "the provider module's",
  imported: "the imported catalog's",
};

const keyOf = (provider: string, model: string): string => `${provider}\u0000${model}`;
/** Distinct (provider, model) names whose lookup is remembered. */
const MAX_MEMOISED_LOOKUPS = 4096;

export class PriceCatalog {
  /** Price version recorded with every cost: the bundled version, plus "+<hash>" of the overrides. */
  readonly version: string;
  readonly bundledVersion: string;
  /** Source fields and LiteLLM entries that could not be represented, with the reason. */
  readonly skipped: readonly SkippedEntry[];

  private readonly entries = new Map<string, Entry>();
  private readonly aliases = new Map<string, string>();
  private readonly distinct = new Set<string>();
  private readonly discounts: Readonly<Record<string, string>>;
  private readonly derived = new Map<string, ModelPrice>();
  /** Memoised lookups by provider, then model as asked (null: unpriced), MAX_MEMOISED_LOOKUPS at most in all. */
  private lookups = new Map<string, Map<string, ModelPrice | null>>();
  private memoised = 0;
  /** Effective-dated prices (./dated-prices.ts), and the entries that have no undated price. */
  private readonly dated = new DatedPrices();
  private readonly datedOnly = new Set<string>();
  /** Imported entries that kept bundled rates the import has none for: the fields, by entry key. */
  private readonly keptBundled = new Map<string, readonly (typeof PRICE_FIELDS)[number][]>();
  private readonly defaultCreated: number;
  /** Tool-call fees by provider: model-specific entries first (bundled catalog, tool_fees). */
  private readonly toolFees = new Map<string, ToolFee[]>();

  /** Builds a catalog from an already validated `pricing:` block (see fromConfig for raw YAML values). */
  constructor(config?: PricingConfig, options: PriceCatalogOptions = {}) {
    const bundled = options.bundled ?? bundledCatalog();
    this.bundledVersion = bundled.version;
    this.defaultCreated = Math.floor(Date.parse(bundled.retrieved) / 1000);
    if (!Number.isSafeInteger(this.defaultCreated))
      throw new Error(`catalog retrieved date unreadable: ${bundled.retrieved}`);

    for (const m of bundled.models) this.put(m, 'bundled');
    for (const f of bundled.tool_fees ?? []) {
      const list = this.toolFees.get(f.provider) ?? [];
      list.push(f);
      // Model-specific entries before the provider-wide ones, so the first match is the most specific.
      list.sort((a, b) => (a.models ? 0 : 1) - (b.models ? 0 : 1));
      this.toolFees.set(f.provider, list);
    }
    const imported = options.imported;
    // A bundled correction outlives an import that still holds the rate it replaces.
    if (imported) this.putImported(correctedImport(imported.models, bundledCorrections()));
    const fromProviders = options.providerPrices ?? [];
    for (const m of fromProviders) this.override(m, 'provider');
    const skipped: SkippedEntry[] = [...bundled.skipped];

    let litellm: CatalogModel[] = [];
    if (config?.litellm_file !== undefined) {
      const path = resolve(options.baseDir ?? process.cwd(), config.litellm_file);
      const result = importLiteLlm(JSON.parse(readFileSync(path, 'utf8')));
      litellm = result.models;
      skipped.push(...result.skipped);
      for (const m of litellm) this.override(m, 'litellm');
    }
    const overrides = config?.models ?? [];
    for (const m of overrides) this.override(m, 'override');
    this.discounts = Object.freeze({ ...(config?.discounts ?? {}) });
    this.skipped = Object.freeze(skipped);

    const changed =
      overrides.length > 0 ||
      litellm.length > 0 ||
      Object.keys(this.discounts).length > 0 ||
      fromProviders.length > 0 ||
      imported !== undefined;
    // Absent parts leave the digest as it was without them, so versions recorded before them stay the same.
    const providers = fromProviders.length > 0 ? fromProviders : undefined;
    const overridden = {
      litellm,
      models: overrides,
      discounts: this.discounts,
      providers,
      imported: imported?.version,
    };
    this.version = changed ? `${bundled.version}+${digest(overridden)}` : bundled.version;
  }

  /**
   * Validates a raw `pricing:` block (throws a ZodError naming the bad field) and builds the catalog.
   * `options` may be the config file's directory.
   */
  static fromConfig(raw: unknown, options: PriceCatalogOptions | string = {}): PriceCatalog {
    const opts = typeof options === 'string' ? { baseDir: options } : options;
    return new PriceCatalog(pricingConfigSchema.parse(raw ?? {}), opts);
  }

  /** The effective price of a model as the client named it, or undefined (unpriced). Memoised: this runs per request. */
  lookup(provider: string, model: string): ModelPrice | undefined {
    if (this.dated.size > 0) return this.lookupAt(provider, model, Date.now());
    // Two levels, not one joined key: the request's own strings are looked up (their hashes kept), no string built.
    const known = this.lookups.get(provider)?.get(model);
    if (known !== undefined) return known ?? undefined;
    const hit = this.find(provider, model);
    const price = hit && this.derive(hit.billing, hit.key, hit.via);
    // Model names come from clients: the memo is bounded, and starts over when full.
    if (this.memoised++ >= MAX_MEMOISED_LOOKUPS) [this.memoised, this.lookups] = [1, new Map()];
    const byModel = this.lookups.get(provider) ?? new Map<string, ModelPrice | null>();
    this.lookups.set(provider, byModel.set(model, price ?? null));
    return price;
  }

  /** The price of a model in force at `at` (epoch ms): a dated price whose window holds it, else the undated one. */
  lookupAt(provider: string, model: string, at: number): ModelPrice | undefined {
    const hit = this.find(provider, model);
    if (!hit) return undefined;
    const dated = this.dated.at(hit.key, at);
    if (dated) return this.derive(hit.billing, hit.key, hit.via, dated);
    return this.datedOnly.has(hit.key) ? undefined : this.derive(hit.billing, hit.key, hit.via);
  }

  /** The price version a cost priced with `price` records: the catalog's, and the dated price's start. */
  versionOf(price: ModelPrice): string {
    return price.effective_from === undefined && price.effective_to === undefined
      ? this.version
      : `${this.version}@${price.effective_from ?? ''}..${price.effective_to ?? ''}`;
  }

  private find(provider: string, model: string): { billing: string; key: string; via: MatchRule } | undefined {
    const p = normalizeProviderSlug(provider);
    const m = model.trim();
    const hit = this.resolve(p, m, true);
    if (hit) return { billing: p, key: hit.key, via: hit.via };
    if (p !== 'openrouter') return undefined;
    const vendor = openRouterVendorIds(stripOwnPrefix(p, m) ?? m);
    if (!vendor) return undefined;
    for (const id of vendor.ids) {
      const v = this.resolve(vendor.provider, id, true);
      if (v) return { billing: p, key: v.key, via: 'openrouter_vendor_fallback' };
    }
    return undefined;
  }

  /** Catalog entries (all, or one provider's), sorted by provider then id; feeds GET /v1/models. */
  models(provider?: string): ModelPrice[] {
    const p = provider === undefined ? undefined : normalizeProviderSlug(provider);
    const out: ModelPrice[] = [];
    for (const [key, e] of this.entries) {
      if (p === undefined || e.price.provider === p) out.push(this.derive(e.price.provider, key, 'exact'));
    }
    return out.sort((a, b) =>
      a.provider === b.provider
        ? a.model < b.model
          ? -1
          : a.model > b.model
            ? 1
            : 0
        : a.provider < b.provider
          ? -1
          : 1,
    );
  }

  private resolve(provider: string, model: string, allowPrefix: boolean): { key: string; via: MatchRule } | undefined {
    const key = keyOf(provider, model);
    if (this.entries.has(key)) return { key, via: 'exact' };
    const alias = this.aliases.get(key);
    if (alias !== undefined) return { key: alias, via: 'alias' };
    const rest = allowPrefix ? stripOwnPrefix(provider, model) : undefined;
    if (rest !== undefined) {
      const r = this.resolve(provider, rest, false);
      if (r) return { key: r.key, via: r.via === 'exact' || r.via === 'alias' ? 'provider_prefix' : r.via };
    }
    const base = undatedId(model);
    if (base !== undefined && !this.distinct.has(key)) {
      const baseKey = keyOf(provider, base);
      const target = this.entries.has(baseKey) ? baseKey : this.aliases.get(baseKey);
      if (target !== undefined) return { key: target, via: 'dated_snapshot' };
    }
    return undefined;
  }

  /** The frozen effective price of an entry, as billed by `billing` (whose discount, or the model's, applies). Cached. */
  private derive(billing: string, key: string, via: MatchRule, dated?: DatedPrice): ModelPrice {
    const cacheKey = `${billing}\u0000${via}\u0000${key}\u0000${dated?.from ?? ''}`;
    const cached = this.derived.get(cacheKey);
    if (cached) return cached;
    const e = dated ?? this.entries.get(key)!;
    // A model's own discount wins over its provider's.
    const d = this.discounts[`${billing}/${e.price.model}`] ?? this.discounts[billing];
    const price: ModelPrice = {
      ...(d === undefined ? e.price : discounted(e.price, d)),
      id: e.price.model,
      created: e.price.created ?? this.defaultCreated,
      origin: e.origin,
    };
    if (d !== undefined) price.discount = d;
    const fees = this.feesFor(e.price.provider, e.price.model, d);
    if (fees) price.toolFees = fees;
    if (via !== 'exact') {
      price.match = {
        via,
        pricedAs: `${e.price.provider}/${e.price.model}`,
        ...(via === 'openrouter_vendor_fallback'
          ? { note: `no openrouter price; using ${e.price.provider}'s own list price for ${e.price.model}` }
          : {}),
      };
    }
    Object.freeze(price);
    this.derived.set(cacheKey, price);
    return price;
  }

  /** The tool fees that apply to a model: per tool, the first entry naming the model, else the provider-wide one. */
  private feesFor(provider: string, model: string, discount: string | undefined): Record<string, ToolFee> | undefined {
    const list = this.toolFees.get(provider);
    if (!list) return undefined;
    const out: Record<string, ToolFee> = {};
    for (const f of list) {
      if (out[f.tool] || (f.models && !f.models.includes(model))) continue;
      out[f.tool] =
        discount === undefined || f.usd === undefined ? f : { ...f, usd: mulDecimal(f.usd, subDecimal('1', discount)) };
    }
    return Object.keys(out).length > 0 ? Object.freeze(out) : undefined;
  }

  /**
   * The imported entries in force that kept bundled rates the import has none for, each field as "cache_read 1.25"
   * (what `prices update` lists).
   */
  keptBundledRates(): { id: string; fields: string[] }[] {
    return [...this.keptBundled].flatMap(([key, fields]) => {
      const entry = this.entries.get(key)!;
      if (entry.origin !== 'imported') return [];
      const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
      return [
        {
          id: `${entry.price.provider}/${entry.price.model}`,
          fields: fields.map((f) => `${f} ${show(entry.price[f])}`),
        },
      ];
    });
  }

  /** Every tool-fee entry of the catalog, as the docs and GET /v1/models may list them. */
  fees(): ToolFee[] {
    return [...this.toolFees.values()].flat();
  }

  private put(m: CatalogModel, origin: Entry['origin']): void {
    const key = keyOf(m.provider, m.model);
    if (isDated(m)) {
      this.dated.add(key, m, origin);
      if (this.entries.has(key)) return;
      this.datedOnly.add(key);
    } else {
      this.datedOnly.delete(key);
    }
    this.entries.set(key, { price: m, origin });
    for (const a of m.aliases ?? []) {
      const ak = keyOf(m.provider, a);
      if (!this.aliases.has(ak)) this.aliases.set(ak, key);
    }
    for (const s of m.distinct_snapshots ?? []) this.distinct.add(keyOf(m.provider, s));
  }

  /**
   * The imported entries over the bundled ones. A dated snapshot the catalog does not list yet, priced like its
   * family, becomes the family's alias (as the bundled catalog's same-price keys are), so whatever prices the
   * family, a local override included, prices it too; a snapshot priced apart keeps an entry of its own.
   */
  private putImported(models: readonly CatalogModel[]): void {
    const snapshots: CatalogModel[] = [];
    for (const m of models) {
      if (undatedId(m.model) !== undefined && !this.entries.has(keyOf(m.provider, m.model))) snapshots.push(m);
      else this.override(m, 'imported');
    }
    for (const m of snapshots) {
      const family = this.resolve(m.provider, undatedId(m.model)!, false);
      if (family && samePrices(this.entries.get(family.key)!.price, this.withBundledRates(m, family.key))) {
        this.aliases.set(keyOf(m.provider, m.model), family.key);
      } else {
        this.override(m, 'imported');
      }
    }
  }

  /**
   * An imported snapshot with the rates the import has none for taken from its family where the family's are
   * bundled ones (kept, or its bundled entry): the rates it would be billed at through the family.
   */
  private withBundledRates(m: CatalogModel, familyKey: string): CatalogModel {
    const family = this.entries.get(familyKey)!;
    const bundled = family.origin === 'bundled' ? PRICE_FIELDS : (this.keptBundled.get(familyKey) ?? []);
    const filled: CatalogModel = { ...m };
    for (const f of bundled)
      if (!(f in m) && family.price[f] !== undefined) Object.assign(filled, { [f]: family.price[f] });
    return filled;
  }

  /** Adds an entry, or replaces all price fields of an existing one (metadata kept unless given). */
  private override(m: ModelOverride, origin: Exclude<Entry['origin'], 'bundled'>): void {
    const key = keyOf(m.provider, m.model);
    const replaced = this.datedOnly.has(key) && !isDated(m) ? undefined : this.entries.get(key);
    const existing = replaced?.price;
    const merged: CatalogModel = { ...(existing ?? {}), kind: existing?.kind ?? 'chat', ...m } as CatalogModel;
    for (const f of ['effective_from', 'effective_to'] as const) if (!(f in m)) delete merged[f];
    this.keptBundled.delete(key);
    if (existing) {
      // The import refreshes a bundled entry from a public source: a rate it has none for is one it cannot refresh,
      // not one the model lost, so the bundled rate stays (prices update lists it). Any other override replaces
      // every price field, so that a negotiated input price is never paired with a stale cache price.
      const keep = origin === 'imported' && replaced!.origin === 'bundled';
      const kept = PRICE_FIELDS.filter((f) => !(f in m) && keep && existing[f] !== undefined);
      for (const f of PRICE_FIELDS) if (!(f in m) && !kept.includes(f)) delete merged[f];
      if (kept.length > 0) this.keptBundled.set(key, kept);
      merged.aliases = [...new Set([...(existing.aliases ?? []), ...(m.aliases ?? [])])];
      const whose = REPLACED_ENTRY[replaced!.origin] ?? 'bundled';
      merged.source_note = `prices from ${SOURCE_OF[origin]} (${whose} entry replaced)`;
    }
    this.put(merged, origin);
    this.derived.clear();
  }
}

/** Short stable hash of override data (sorted keys, so YAML key order does not change the version). */
function digest(value: unknown): string {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : typeof v === 'object' && v !== null
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
              .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
          )
        : v;
  return createHash('sha256')
    .update(JSON.stringify(canonical(value)))
    .digest('hex')
    .slice(0, 12);
}
