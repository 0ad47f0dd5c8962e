/**
 * FS-13 across replicas: two flash-sale processes on one Redis and one PostgreSQL share one
 * waiting room per sale — positions from one counter, one "serving up to P", the cap on
 * active checkouts counted over both (each process ticks the room), an entrant's secret
 * and admission token good on either replica.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { eventually } from "@casebook/lab/eventually";
import { startServerProcess } from "@casebook/lab/server-process";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres, requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { migrateFlashSale } from "../src/store/migrate.ts";

const entry = new URL("../src/main.ts", import.meta.url);
const ADMIN = "admin-token-0123456789";
const MAX_ACTIVE = 5;
const ENTRANTS = 20;

test("FS-13 two API processes share one waiting room in Redis: one position each, one P, the cap over both, secrets and tokens good on either", async (t) => {
  const pgUrl = await requirePostgres(t);
  const redisUrl = pgUrl && (await requireRedis(t));
  if (!pgUrl || !redisUrl) return;
  const { schema, drop } = await openPostgresTestSchema(pgUrl, {
    system: "flash-sale",
    prefix: "fs_room",
    prepare: migrateFlashSale,
    maxConnections: 2,
  });
  const prefix = `${uniqueName("fs:room2")}:`;
  const env = {
    DATABASE_URL: pgUrl,
    FLASH_SALE_DB_SCHEMA: schema,
    REDIS_URL: redisUrl,
    FLASH_SALE_REDIS_PREFIX: prefix,
    FLASH_SALE_ADMIN_TOKEN: ADMIN,
    FLASH_SALE_TOKEN_KEYS: `k1=${"s".repeat(40)}`,
    FLASH_SALE_ADMIT_PER_S: "1000",
    FLASH_SALE_MAX_ACTIVE: String(MAX_ACTIVE),
    FLASH_SALE_ROOM_TICK_MS: "50",
  };
  const replicas = await Promise.all([
    startServerProcess({ name: "flash-sale-a", entry, env }),
    startServerProcess({ name: "flash-sale-b", entry, env }),
  ]);
  t.after(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    const redis = await connectRedis({ url: redisUrl });
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await closeRedis(redis);
    await drop();
  });
  const call = async (r: number, method: string, path: string, body?: unknown, headers = {}) => {
    const res = await fetch(`${replicas[r]!.url}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const created = await call(
    0,
    "POST",
    "/v1/admin/sales",
    { id: "gig", name: "gig", tickets: 50, priceMinor: 5_000, currency: "USD" },
    { authorization: `Bearer ${ADMIN}` },
  );
  assert.equal(created.status, 201, JSON.stringify(created.json));

  const joins = await Promise.all(
    Array.from({ length: ENTRANTS }, (_, i) =>
      call(i % 2, "POST", "/v1/sales/gig/entrants", { user: `u${i}` }),
    ),
  );
  assert.deepEqual(
    joins.map((j) => j.json.position).sort((a, b) => Number(a) - Number(b)),
    Array.from({ length: ENTRANTS }, (_, i) => i + 1),
    "one counter for both replicas",
  );
  const again = await call(1, "POST", "/v1/sales/gig/entrants", { user: "u0" });
  assert.deepEqual(
    [again.status, again.json.position, again.json.secret],
    [200, joins[0]!.json.position, null],
  );

  // Both replicas tick the room; together they never admit past the cap.
  const servingUpTo = async (r: number) => (await call(r, "GET", "/v1/sales/gig/room")).json.servingUpTo;
  await eventually(async () => (await servingUpTo(1)) === MAX_ACTIVE, {
    what: "P at the cap",
    timeoutMs: 20_000,
  });
  await new Promise((r) => setTimeout(r, 300)); // several ticks of each replica
  const [a, b] = [
    (await call(0, "GET", "/v1/sales/gig/room")).json,
    (await call(1, "GET", "/v1/sales/gig/room")).json,
  ];
  assert.deepEqual(a, b, "one room, the same status from either replica");
  assert.deepEqual([a.servingUpTo, a.active, a.lastPosition], [MAX_ACTIVE, MAX_ACTIVE, ENTRANTS]);

  // The entrant at position 1 joined on one replica; its secret and token work on the other.
  const first = joins.find((j) => j.json.position === 1)!;
  const joinedOn = joins.indexOf(first) % 2;
  const other = 1 - joinedOn;
  const secret = String(first.json.secret);
  const wrong = await call(other, "POST", `/v1/sales/gig/entrants/${first.json.user}/admission`, undefined, {
    "x-entrant-secret": "not-the-secret",
  });
  assert.equal(wrong.status, 403, JSON.stringify(wrong.json));
  const admission = await call(
    other,
    "POST",
    `/v1/sales/gig/entrants/${first.json.user}/admission`,
    undefined,
    {
      "x-entrant-secret": secret,
    },
  );
  assert.equal(admission.json.state, "admitted", JSON.stringify(admission.json));
  const hold = await call(
    joinedOn,
    "POST",
    "/v1/sales/gig/holds",
    { quantity: 1 },
    {
      authorization: `Bearer ${admission.json.token}`,
      "x-entrant-secret": secret,
    },
  );
  assert.equal(hold.status, 201, JSON.stringify(hold.json));
  const paid = await call(other, "POST", `/v1/holds/${hold.json.id}/pay`);
  assert.equal(paid.status, 202, JSON.stringify(paid.json));
  // Paying left checkout: its slot goes to position 6, whichever replica ticks first.
  await eventually(async () => (await servingUpTo(joinedOn)) === MAX_ACTIVE + 1, {
    what: "the freed slot admitted position 6",
    timeoutMs: 20_000,
  });
});
