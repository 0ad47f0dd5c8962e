/**
 * The tenant HTTP API over a store world (test/store-fixture.ts: a migrated database, a
 * manual clock, seeded random bytes), wired by `registerWebhooksApi` exactly as main.ts
 * wires it, and driven through Fastify's inject. Helpers make tenants (with their API
 * keys), send requests as one of them, fan events out (the relay on the world's clock), and
 * finish a delivery with one recorded attempt — what the worker would do.
 */
import assert from "node:assert/strict";
import { createService, type Service } from "@casebook/infra/http/service";
import type { Database } from "@casebook/infra/sql/sql";
import type { Backend } from "@casebook/lab/contract-suite";
import { registerWebhooksApi } from "../src/api/register-api.ts";
import { createUrlPolicy, type UrlPolicyInput } from "../src/domain/url-policy.ts";
import { webhooksErrorRegistries } from "../src/errors.ts";
import { recordAttempt } from "../src/store/delivery-results.ts";
import { createTenant } from "../src/store/tenant-repository.ts";
import { storeBackends } from "./store-backends.ts";
import { claim, newWorld, relayAll, type World } from "./store-fixture.ts";

/** A parsed response body: tests read arbitrary JSON shapes and assert them field by field. */
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are checked by the assertions themselves
export type Json = any;

export interface Reply {
  status: number;
  headers: Record<string, unknown>;
  body: Json;
}

export interface RequestOptions {
  key?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export const ADMIN_TOKEN = "test-admin-token-0123456789";
export const MAX_PAYLOAD_BYTES = 4_096;

export interface ApiWorld extends World {
  service: Service;
  request(method: string, url: string, options?: RequestOptions): Promise<Reply>;
  /** A fresh tenant and its API key. */
  tenant(name?: string): Promise<{ id: string; key: string }>;
  /** Publishes every committed event (relay + dispatcher on the world's clock). */
  fanOut(): Promise<void>;
  /** Claims the tenant's due deliveries and records one attempt each, ending in `state`. */
  finishDeliveries(tenantId: string, state: "succeeded" | "failed"): Promise<string[]>;
}

export interface ApiWorldOptions {
  urlPolicy?: UrlPolicyInput;
  /** Default ADMIN_TOKEN; null: no admin API (no token configured). */
  adminToken?: string | null;
}

export async function apiWorld(db: Database, options: ApiWorldOptions = {}): Promise<ApiWorld> {
  const world = newWorld(db);
  const service = createService({
    name: "webhooks-test",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
    errors: webhooksErrorRegistries,
  });
  await registerWebhooksApi(service.app, {
    db,
    clock: world.clock,
    randomBytes: world.randomBytes,
    settings: { maxPayloadBytes: MAX_PAYLOAD_BYTES, urlPolicy: createUrlPolicy(options.urlPolicy) },
    tenantDefaults: { deliveryWindowS: 86_400, payloadRetentionS: 86_400 },
    adminToken: options.adminToken === null ? undefined : (options.adminToken ?? ADMIN_TOKEN),
  });
  await service.app.ready();
  return {
    ...world,
    service,
    async request(method, url, { key, body, headers = {} } = {}) {
      const res = await service.app.inject({
        method: method as "GET",
        url,
        headers: { ...(key === undefined ? {} : { authorization: `Bearer ${key}` }), ...headers },
        ...(body === undefined ? {} : { payload: body as object }),
      });
      return { status: res.statusCode, headers: res.headers, body: res.body === "" ? undefined : res.json() };
    },
    async tenant(name = "Acme") {
      const { tenant, apiKey } = await createTenant(db, { name }, world.ctx());
      return { id: tenant.id, key: apiKey.key };
    },
    fanOut: () => relayAll(world),
    async finishDeliveries(tenantId, state) {
      const claimed = await claim(world, tenantId);
      const nowMs = world.clock.nowMs();
      for (const lease of claimed) {
        const next = state === "succeeded" ? { state } : { state, reason: "gave up" };
        const status = state === "succeeded" ? 200 : 500;
        const responseClass = state === "succeeded" ? "2xx" : "5xx";
        const written = await recordAttempt(
          db,
          { lease, startedAtMs: nowMs, durationMs: 12, responseClass, status, next },
          nowMs,
        );
        assert.ok(written.won, "the fixture's own lease holds");
      }
      return claimed.map((c) => c.deliveryId);
    },
  };
}

/** The API world on PGlite (memory) and PostgreSQL (a schema of its own), for contractSuite. */
export function apiBackends(prefix: string, options: ApiWorldOptions = {}): Backend<ApiWorld>[] {
  return storeBackends(prefix).map((backend) => ({
    name: backend.name,
    embedded: backend.embedded,
    async open(t) {
      const opened = await backend.open(t);
      if (!opened) return undefined;
      const world = await apiWorld(opened.subject, options);
      return {
        subject: world,
        close: async () => {
          await world.service.close();
          await opened.close();
        },
      };
    },
  }));
}

/** Asserts a problem+json answer with `status` and `code`; returns its body. */
export function assertProblem(res: Reply, status: number, code: string): Json {
  assert.equal(
    res.status,
    status,
    `expected ${status} ${code}, got ${res.status} ${JSON.stringify(res.body)}`,
  );
  assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
  assert.equal(res.body.code, code);
  return res.body;
}

/** The field pointers a problem names (`errors[].field`). */
export function problemFields(body: Json): string[] {
  return ((body.errors ?? []) as { field: string }[]).map((e) => e.field);
}

/** Row counts of the tables a write could touch: "nothing written" is these unchanged. */
export async function tableCounts(db: Database): Promise<Record<string, bigint>> {
  const tables = ["tenants", "subscriptions", "subscription_secrets", "events", "outbox", "deliveries"];
  const counts: Record<string, bigint> = {};
  for (const table of tables) {
    const { rows } = await db.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${table}`);
    counts[table] = rows[0]!.n;
  }
  return counts;
}
