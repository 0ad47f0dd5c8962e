/**
 * The whole HTTP API of metrics on a Fastify instance, wired the one way main.ts and the
 * tests both use: the ingest and the query API in one scope whose onRequest hook resolves the
 * tenant's API key (a stranger is refused before any body is parsed: 401 in Prometheus's
 * error shape) — with the scraper's `/api/v1/targets` beside them — and the admin routes in
 * another scope behind the operator's token. Verified keys are remembered for
 * `keyCacheTtlMs` (kit's VerifiedKeyCache: the key's row and its tenant's were two queries
 * per remote-write request); a rotation or revocation through the admin routes forgets them
 * at once, one made elsewhere is seen within the TTL.
 *
 * @example
 * await registerApi(service.app, { db, clock, randomBytes, tenants, tsdbs, metrics, settings });
 */
import { createBearerAuth } from "@casebook/infra/http/bearer-auth";
import type { Database } from "@casebook/infra/sql/sql";
import type { RandomBytes } from "@casebook/kit/api-key";
import type { Clock } from "@casebook/kit/clock";
import { VerifiedKeyCache } from "@casebook/kit/verified-key-cache";
import type { FastifyInstance } from "fastify";
import type { Labels } from "../domain/labels.ts";
import type { SystemMetrics } from "../metrics.ts";
import type { SampleStream } from "../store/sample-stream.ts";
import { type TenantRepository, tenantKeys } from "../store/tenant-repository.ts";
import type { TenantTsdbs } from "../store/tenant-tsdbs.ts";
import { registerAdminApi } from "./admin-routes.ts";
import { registerIngestRoutes } from "./ingest-routes.ts";
import { registerQueryRoutes } from "./query-routes.ts";
import { registerTargetsRoute, type TargetsRouteOptions } from "./targets-route.ts";
import type { QueryTiers } from "./tiered-query.ts";

const REALM = "metrics";
/** Keys one process remembers at most (≈ 200 B each). */
const MAX_CACHED_KEYS = 10_000;

export interface ApiSettings {
  readonly standardLabels: Labels;
  readonly partitions: number;
  /** MT-07: the stream the ingest publishes to; undefined = the ingest appends to the TSDB itself. */
  readonly stream?: SampleStream | undefined;
  readonly writeBodyLimitBytes: number;
  readonly writeMaxDecodedBytes: number;
  readonly lookbackMs: number;
  readonly queryMaxSamples: number;
  /** How long a verified API key is trusted without asking the database (0: every request asks). */
  readonly keyCacheTtlMs: number;
  /** MT-12: the rollup tiers the query router may pick (undefined: every query is raw). */
  readonly tiers?: QueryTiers;
}

/** What the routes need, passed in: time from the clock (never Date.now()), stores as they arrive. */
export interface ApiOptions {
  readonly db: Database;
  readonly clock: Clock;
  readonly randomBytes: RandomBytes;
  readonly tenants: TenantRepository;
  readonly tsdbs: TenantTsdbs;
  readonly metrics: SystemMetrics;
  readonly settings: ApiSettings;
  /** The scraper, for `/api/v1/targets` (undefined: the route answers empty lists). */
  readonly scrape?: Omit<TargetsRouteOptions, "tenantOf"> | undefined;
  /** METRICS_ADMIN_TOKEN; undefined: no admin routes at all. */
  readonly adminToken?: string | undefined;
}

export async function registerApi(app: FastifyInstance, options: ApiOptions): Promise<void> {
  const { settings } = options;
  const keys = new VerifiedKeyCache(
    {
      parse: (key) => tenantKeys.scheme.parse(key),
      verify: (presented) => options.tenants.authenticatePresented(presented),
    },
    { clock: options.clock, ttlMs: settings.keyCacheTtlMs, maxEntries: MAX_CACHED_KEYS },
  );
  // A writer who keeps writing is re-checked in the background: no request waits for the table.
  const stopRefreshing = keys.startRefreshing();
  app.addHook("onClose", async () => stopRefreshing());
  const auth = createBearerAuth({ realm: REALM, verify: (key) => keys.get(key) });
  await app.register(async (scope) => {
    scope.addHook("onRequest", auth.authenticate);
    await registerIngestRoutes(scope, {
      ...settings,
      tsdbs: options.tsdbs,
      metrics: options.metrics,
      tenantOf: auth.principalOf,
    });
    // Its own scope: the urlencoded form parser (Grafana's POST queries) must not reach the ingest.
    await scope.register(async (queryScope) =>
      registerQueryRoutes(queryScope, {
        tsdbs: options.tsdbs,
        clock: options.clock,
        tenantOf: auth.principalOf,
        lookbackMs: settings.lookbackMs,
        maxSamples: settings.queryMaxSamples,
        tiers: settings.tiers,
      }),
    );
    registerTargetsRoute(scope, {
      scrapeTenant: "",
      states: () => [],
      intervalMs: 0,
      timeoutMs: 0,
      ...options.scrape,
      tenantOf: auth.principalOf,
    });
  });
  if (options.adminToken === undefined) return;
  await registerAdminApi(app, {
    ...options,
    adminToken: options.adminToken,
    onKeysChanged: () => keys.clear(),
  });
}
