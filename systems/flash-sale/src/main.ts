/**
 * Composition root of flash-sale — ticket flash sale (seed 000 §8): config → database
 * (PostgreSQL or embedded PGlite) and migrations → the hot stock (Redis with REDIS_URL, else
 * the in-process store) → the checkout (stock + ledger) → the API → the hold reconciler →
 * graceful shutdown. Stateless with Redis and PostgreSQL: run as many replicas as you like.
 *
 * @example
 * // PORT=8108 node systems/flash-sale/src/main.ts   (npx casebook run flash-sale runs it through the CLI)
 * const running = await main({ PORT: "0", LOG_LEVEL: "silent", FLASH_SALE_ADMIN_TOKEN: token });
 * await fetch(`${running.url}/healthz`); // 200
 * await running.close();
 */
import { randomBytes } from "node:crypto";
import { bearerSecurityScheme } from "@casebook/infra/http/bearer-auth";
import { registerScenarioRoutes, ScenarioRuns, scenarioErrors } from "@casebook/infra/http/scenario-runs";
import type { Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { databaseOptionsOf } from "@casebook/infra/http/service-preset";
import { startService } from "@casebook/infra/http/start-service";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import { redisErrors } from "@casebook/infra/redis/redis-errors";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import {
  InProcessScriptRunner,
  RedisScriptRunner,
  type ScriptRunner,
} from "@casebook/infra/redis/script-runner";
import type { Database } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { kitErrors } from "@casebook/kit/kit-errors";
import { systemRandom } from "@casebook/kit/random";
import { SignedTokens } from "@casebook/kit/signed-token";
import packageJson from "../package.json" with { type: "json" };
import { type AdmissionData, Admissions } from "./api/admission.ts";
import { type IpLimiter, LocalIpLimiter, RateLimiterIpLimiter } from "./api/edge-guard.ts";
import { type ChallengeData, JoinChallenges } from "./api/join-challenges.ts";
import { registerApi } from "./api/register-api.ts";
import { LocalCharger } from "./clients/local-charger.ts";
import { PaymentsCharger } from "./clients/payments-charger.ts";
import { configSchema, DEFAULT_RESERVE_LANES, loadSystemConfig, type SystemConfig } from "./config.ts";
import type { Charger } from "./domain/charger.ts";
import { Checkout, type StockPort } from "./domain/checkout.ts";
import { errors } from "./errors.ts";
import { createMetrics, type SystemMetrics } from "./metrics.ts";
import { arrivalCurveScenario } from "./scenarios/arrival-curve-scenario.ts";
import { saleRaceScenario } from "./scenarios/sale-race-scenario.ts";
import { HoldLedger } from "./store/hold-ledger.ts";
import { InProcessRooms } from "./store/in-process-rooms.ts";
import { migrateFlashSale } from "./store/migrate.ts";
import { RedisRooms, roomIncludesDir, roomScriptsDir } from "./store/redis-rooms.ts";
import { countHoldsByState, getSale, listSaleIds } from "./store/sale-repository.ts";
import { stockTwins } from "./store/script-twins.ts";
import { StockStore, stockScriptsDir } from "./store/stock-store.ts";
import { ChargeWorker } from "./workers/charge-worker.ts";
import { HoldReconciler } from "./workers/hold-reconciler.ts";
import { RoomTicker } from "./workers/room-ticker.ts";

export const SYSTEM = "flash-sale";
export const VERSION = packageJson.version;
/** Sales the reconciler and /metrics look at: the most recent ones. */
const MAX_SALES_WATCHED = 100;

export interface RunningSystem {
  readonly url: string;
  readonly service: Service;
  readonly db: Database;
  readonly config: SystemConfig;
  readonly stock: StockStore;
  readonly reconciler: HoldReconciler;
  readonly rooms: RoomTicker;
  readonly charges: ChargeWorker;
  readonly metrics: SystemMetrics;
  close(): Promise<void>;
}

export interface MainOptions {
  clock?: Clock;
}

/** The stock's and the rooms' script runners: Redis with REDIS_URL (one connection), else in process. */
async function engines(
  config: SystemConfig,
  service: Service,
  clock: Clock,
): Promise<{ stock: ScriptRunner; rooms: ScriptRunner | undefined }> {
  const registry = await ScriptRegistry.fromDir(stockScriptsDir);
  if (config.redisUrl === undefined) {
    const keyspace = new InProcessKeyspace({ clock, maxKeys: 1_000_000 });
    return { stock: new InProcessScriptRunner({ registry, twins: stockTwins, keyspace }), rooms: undefined };
  }
  const redis = await connectRedis({ url: config.redisUrl, keyPrefix: config.redisKeyPrefix });
  service.onClose(() => closeRedis(redis));
  const roomRegistry = await ScriptRegistry.fromDir(roomScriptsDir, { includesDir: roomIncludesDir });
  await registry.loadAll(redis);
  await roomRegistry.loadAll(redis);
  return { stock: new RedisScriptRunner(redis, registry), rooms: new RedisScriptRunner(redis, roomRegistry) };
}

/**
 * FS-03's naive stock, behind FLASH_SALE_STOCK_MODE=naive only: read, check, write in three
 * steps, no undo. It oversells the counter; the ticket rows (FS-10) still refuse what does not exist.
 */
function naiveStock(stock: StockStore, clock: Clock): StockPort {
  return {
    reserve: async (saleId, hold) => {
      const r = await stock.naiveReserve(saleId, hold.quantity);
      if (!r.reserved)
        return r.read === -1
          ? { kind: "missing" }
          : { kind: "refused", availableAfter: r.read - hold.quantity };
      const view = await stock.view(saleId);
      return {
        kind: "reserved",
        availableAfter: r.read - hold.quantity,
        epoch: view.epoch,
        expiresAtMs: clock.nowMs() + hold.holdTtlMs,
      };
    },
    returnHold: async () => undefined,
  };
}

/** FS-14's edge layers from the config: the per-IP limit and the join's proof of work. */
function edgeOf(
  config: SystemConfig,
  service: Service,
  clock: Clock,
  keys: { kid: string; secret: string }[],
): { ipLimiter?: IpLimiter; joinChallenge?: JoinChallenges } {
  let ipLimiter: IpLimiter | undefined;
  if (config.rateLimiterUrl !== undefined) {
    const remote = new RateLimiterIpLimiter({
      url: config.rateLimiterUrl,
      token: config.rateLimiterToken,
      timeoutMs: config.rateLimiterTimeoutMs,
      onError: (err) =>
        service.log.warn({ err }, "rate limiter unreachable; the per-IP limit lets this one through"),
    });
    service.onClose(() => remote.close());
    ipLimiter = remote;
  } else if (config.ipRatePerS > 0) {
    ipLimiter = new LocalIpLimiter({
      ratePerS: config.ipRatePerS,
      burst: config.ipBurst,
      maxIps: 100_000,
      clock,
    });
  }
  const joinChallenge =
    config.joinPowBits > 0
      ? new JoinChallenges({
          tokens: new SignedTokens<ChallengeData>({ clock, keys }),
          bits: config.joinPowBits,
          ttlMs: 120_000,
        })
      : undefined;
  return { ...(ipLimiter && { ipLimiter }), ...(joinChallenge && { joinChallenge }) };
}

function chargerOf(config: SystemConfig, service: Service): Charger {
  if (config.paymentsUrl === undefined || config.paymentsApiKey === undefined) return new LocalCharger();
  const charger = new PaymentsCharger({
    url: config.paymentsUrl.replace(/\/$/, ""),
    apiKey: config.paymentsApiKey,
    cardToken: "tok_visa",
    timeoutMs: config.chargeTimeoutMs,
  });
  service.onClose(() => charger.close());
  return charger;
}

export async function main(
  env: NodeJS.ProcessEnv = process.env,
  options: MainOptions = {},
): Promise<RunningSystem> {
  const config = loadSystemConfig(env);
  const clock = options.clock ?? systemClock;
  const { url, service, db, built } = await startService({
    service: {
      name: SYSTEM,
      version: VERSION,
      log: { level: config.logLevel },
      errors: [errors, redisErrors, sqlErrors, kitErrors, scenarioErrors],
      openapi: {
        securitySchemes: bearerSecurityScheme(
          "The operator's token (FLASH_SALE_ADMIN_TOKEN) on /v1/admin routes",
        ),
      },
      description:
        "Ticket flash sale (seed 000 §8): exactly N sold, holds that expire, charges at the processor's rate.",
    },
    database: { system: SYSTEM, env, ...databaseOptionsOf(config), migrate: migrateFlashSale },
    build: async ({ service, db }) => {
      const runners = await engines(config, service, clock);
      const stock = new StockStore(runners.stock, {
        ...(config.reserveMaxBatch > 1 && {
          reserveBatch: {
            maxBatch: config.reserveMaxBatch,
            maxPending: config.reserveMaxPending,
            lanes: DEFAULT_RESERVE_LANES,
          },
        }),
      });
      const watched = () => listSaleIds(db, MAX_SALES_WATCHED);
      const metrics = createMetrics(service.registry, {
        version: VERSION,
        read: {
          stock: async () =>
            Promise.all(
              (await watched()).map(async (saleId) => ({
                saleId,
                available: (await stock.view(saleId)).available,
              })),
            ),
          holdsByState: () => countHoldsByState(db),
        },
      });
      const ledger = new HoldLedger({
        db,
        stock,
        clock,
        recheckMs: config.chargingRecheckMs,
        onRecomputed: (saleId, r) => {
          metrics.recomputes.inc();
          service.log.warn(
            { saleId, epoch: r.epoch, available: r.available, lost: r.lost },
            "stock recomputed from PostgreSQL",
          );
        },
      });
      const port = config.stockMode === "naive" ? naiveStock(stock, clock) : stock;
      const newHoldId = () => `h_${randomBytes(16).toString("hex")}`;
      const checkout = new Checkout({ stock: port, ledger, newHoldId, clock });
      const roomConfig = {
        admitPerS: config.admitPerS,
        maxActive: config.maxActive,
        graceMs: config.graceMs,
        sessionMs: Math.max(config.sessionMs, config.graceMs),
        maxEntrants: config.roomMaxEntrants,
        ...(config.roomCarryMs === undefined ? {} : { carryMs: config.roomCarryMs }),
      };
      const rooms = new RoomTicker({
        port:
          runners.rooms === undefined
            ? new InProcessRooms({
                config: roomConfig,
                clock,
                random: systemRandom,
                maxRooms: MAX_SALES_WATCHED,
              })
            : new RedisRooms(runners.rooms, roomConfig),
        opensAtMsOf: async (saleId) => (await getSale(db, saleId))?.opensAtMs,
        idleMs: config.roomTickMs,
        maxRooms: MAX_SALES_WATCHED,
        onError: (err) => service.log.warn({ err }, "waiting room tick failed"),
      });
      const keys = config.tokenKeys ?? [{ kid: "local", secret: randomBytes(32).toString("base64url") }];
      const admissions = new Admissions({ tokens: new SignedTokens<AdmissionData>({ clock, keys }) });
      await registerApi(service.app, {
        db,
        stock,
        checkout,
        clock,
        randomHex: (n) => randomBytes(n).toString("hex"),
        holdTtlMs: config.holdTtlMs,
        recheckMs: config.chargingRecheckMs,
        adminToken: config.adminToken,
        rooms,
        admissions,
        random: systemRandom,
        ...edgeOf(config, service, clock, keys),
      });
      // The console's scenarios (issue 23), loopback only.
      const scenarios = new ScenarioRuns([
        saleRaceScenario({ db, stock, checkout, recheckMs: config.chargingRecheckMs }),
        arrivalCurveScenario({ db, stock, checkout, recheckMs: config.chargingRecheckMs }),
      ]);
      registerScenarioRoutes(service.app, scenarios);
      service.onClose(() => scenarios.drain());
      rooms.start();
      service.onClose(() => rooms.stop());
      const reconciler = new HoldReconciler({
        db,
        stock,
        ledger,
        clock,
        sales: watched,
        maxBatch: config.reconcileMaxBatch,
        idleMs: config.reconcileIntervalMs,
        recheckMs: config.chargingRecheckMs,
        onError: (err, failures) =>
          service.log.warn({ err, failures }, "hold reconciler round failed; retrying"),
      });
      reconciler.start();
      service.onClose(() => reconciler.stop());
      const charges = new ChargeWorker({
        db,
        stock,
        charger: chargerOf(config, service),
        clock,
        ratePerS: config.chargeRatePerS,
        maxBatch: Math.max(1, Math.ceil(config.chargeRatePerS)),
        maxInFlight: config.chargeMaxInFlight,
        leaseMs: config.chargeTimeoutMs * 4 + 10_000,
        idleMs: 100,
        retryBaseMs: 500,
        retryCapMs: 30_000,
        onError: (err, holdId) =>
          service.log.warn({ err, holdId }, "charge step failed; retrying with the same key"),
      });
      charges.start();
      service.onClose(() => charges.stop());
      return { stock, reconciler, rooms, charges, metrics };
    },
    listen: { port: config.port, host: config.host },
    listening: (_, { db }) => ({
      engine: db.engine,
      stock: config.redisUrl === undefined ? "in-process" : "redis",
      stockMode: config.stockMode,
    }),
  });
  return { url, service, db, config, ...built, close: () => service.close() };
}

if (import.meta.main) {
  await runServiceEntry({
    name: SYSTEM,
    summary: "ticket flash sale (seed 000 §8)",
    schema: configSchema,
    usage: [`npx casebook run ${SYSTEM}`, `node systems/${SYSTEM}/src/main.ts`],
    notes: `The API, the design and the claims: systems/${SYSTEM}/README.md`,
    start: async () => (await main()).service,
  });
}
