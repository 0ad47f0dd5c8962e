/**
 * The tenants the stream's consumers look up, read from the database at most once per
 * `ttlMs` each. The hot writer needs a message's tenant (its ceilings, MT-16) for every
 * message — one per partition per remote-write request (16 when this was written) — and a query per message
 * was the bench's largest CPU cost (PGlite's protocol round trip, ~29% of the service's CPU on
 * small batches). A ceiling changed in the database applies within `ttlMs`; a tenant not
 * found is not remembered, so a tenant created a moment ago is seen at its first message.
 * Bounded: at most `maxTenants` entries, the oldest forgotten first.
 *
 * @example
 * const cache = new TenantCache((id) => tenants.find(id), { clock: systemClock, ttlMs: 5_000, maxTenants: 10_000 });
 * await cache.find("acme"); // a query
 * await cache.find("acme"); // from memory for the next 5 s
 */
import type { Clock } from "@casebook/kit/clock";
import type { Tenant } from "./tenant-repository.ts";

export class TenantCache {
  readonly #load: (id: string) => Promise<Tenant | undefined>;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #maxTenants: number;
  /** Insertion order is age order: a refreshed entry is deleted and set again. */
  readonly #entries = new Map<string, { tenant: Tenant; expiresAtMs: number }>();

  constructor(
    load: (id: string) => Promise<Tenant | undefined>,
    options: { clock: Clock; ttlMs: number; maxTenants: number },
  ) {
    this.#load = load;
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs;
    this.#maxTenants = options.maxTenants;
  }

  async find(id: string): Promise<Tenant | undefined> {
    const now = this.#clock.nowMs();
    const cached = this.#entries.get(id);
    if (cached !== undefined && cached.expiresAtMs > now) return cached.tenant;
    const tenant = await this.#load(id);
    this.#entries.delete(id);
    if (tenant === undefined) return undefined;
    this.#entries.set(id, { tenant, expiresAtMs: now + this.#ttlMs });
    if (this.#entries.size > this.#maxTenants) this.#entries.delete(this.#entries.keys().next().value!);
    return tenant;
  }
}
