/**
 * The API key table on every SQL backend: the DDL helper's table, issue (a fresh prefix on a
 * collision), authenticate (unknown, wrong, expired, malformed all undefined), list, rotation
 * (expireAll), revoke, and register (a key made elsewhere, stored idempotently).
 */
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { apiKeyScheme } from "@casebook/kit/api-key";
import { contractSuite } from "@casebook/lab/contract-suite";
import { sqlBackends } from "@casebook/lab/sql-backends";
import { ApiKeyTable, apiKeyTableSql, apiKeyUsageSql } from "../../src/sql/api-key-table.ts";
import { applyMigrations, migration } from "../../src/sql/migrations.ts";
import type { Database } from "../../src/sql/sql.ts";

const scheme = apiKeyScheme("ok");
const keys = new ApiKeyTable({ table: "owner_api_keys", ownerColumn: "owner_id", scheme });
/** The same table with its owners known (rotation) and last_used_at written at most every 10 s. */
const TOUCH_MS = 10_000;
const ownedKeys = new ApiKeyTable({
  table: "owner_api_keys",
  ownerColumn: "owner_id",
  ownerTable: "owners",
  scheme,
  touchIntervalMs: TOUCH_MS,
});

const backends = sqlBackends({
  system: "api-key-table",
  prefix: "apikeys",
  prepare: (db) =>
    applyMigrations(db, [
      migration("001_owners", "CREATE TABLE owners (id text PRIMARY KEY)"),
      migration(
        "002_api_keys",
        apiKeyTableSql({ table: "owner_api_keys", ownerColumn: "owner_id", ownerTable: "owners", scheme }),
      ),
      migration("003_api_key_usage", apiKeyUsageSql({ table: "owner_api_keys" })),
    ]),
  subject: (db) => db,
});

/** Two fresh owners: the cases of one backend share its database. */
async function owners(db: Database): Promise<[string, string]> {
  const ids: [string, string] = [`o_${randomUUID()}`, `o_${randomUUID()}`];
  await db.query("INSERT INTO owners (id) VALUES ($1), ($2)", ids);
  return ids;
}

contractSuite("api key table", backends, (test) => {
  test("issue → authenticate; unknown, wrong-secret, other-kind and malformed keys are undefined", async (db) => {
    const [o1] = await owners(db);
    const issued = await db.transaction((tx) => keys.issue(tx, o1, { nowMs: 1_000, randomBytes }));
    assert.equal(await keys.authenticate(db, issued.key, 2_000), o1);
    const wrong = `${issued.prefix}_${"A".repeat(43)}`;
    const unknown = scheme.issue(randomBytes).key;
    for (const key of [wrong, unknown, `sk_${issued.key.slice(3)}`, "garbage"]) {
      assert.equal(await keys.authenticate(db, key, 2_000), undefined, key);
    }
    const { rows } = await db.query<{ key_hash: string }>("SELECT key_hash FROM owner_api_keys");
    assert.deepEqual(rows, [{ key_hash: issued.hash }], "only the hash is stored");
  });

  test("a taken prefix costs a retry with fresh bytes; expiry, rotation and revocation end a key", async (db) => {
    const [o1, o2] = await owners(db);
    const first = await keys.issue(db, o1, { nowMs: 1_000, randomBytes });
    // The same id bytes again, then fresh ones: the first insert hits the taken prefix.
    const id = Buffer.from(first.prefix.slice(3), "hex");
    const chunks = [id, randomBytes(32), randomBytes(8), randomBytes(32)];
    const second = await keys.issue(db, o1, {
      nowMs: 2_000,
      randomBytes: () => chunks.shift()!,
      expiresAtMs: 10_000,
    });
    assert.notEqual(second.prefix, first.prefix);
    assert.equal(await keys.authenticate(db, second.key, 9_999), o1);
    assert.equal(await keys.authenticate(db, second.key, 10_000), undefined, "expired at its instant");
    assert.deepEqual(
      (await keys.list(db, o1)).map((k) => k.prefix),
      [second.prefix, first.prefix],
    );
    assert.equal(await keys.expireAll(db, o1, 5_000), 2, "the live key and the one expiring later");
    assert.equal(await keys.authenticate(db, first.key, 4_999), o1, "an overlap keeps it alive");
    assert.equal(await keys.authenticate(db, first.key, 5_000), undefined);
    const third = await keys.issue(db, o2, { nowMs: 1_000, randomBytes });
    assert.equal(await keys.revoke(db, o1, third.prefix, 2_000), false, "another owner's key");
    assert.equal(await keys.revoke(db, o2, third.prefix, 2_000), true);
    assert.equal(await keys.revoke(db, o2, third.prefix, 3_000), false, "already revoked");
    assert.equal(await keys.authenticate(db, third.key, 2_000), undefined);
  });

  test("the table's CHECKs refuse a prefix of another kind and a hash that is not sha256 hex", async (db) => {
    const [o1] = await owners(db);
    const bad = [
      ["sk_0123456789abcdef", "0".repeat(64)],
      ["ok_0123456789abcdef", "Z".repeat(64)],
    ];
    for (const [prefix, hash] of bad) {
      await assert.rejects(
        db.query(
          "INSERT INTO owner_api_keys (prefix, owner_id, key_hash, created_at) VALUES ($1, $3, $2, now())",
          [prefix, hash, o1],
        ),
      );
    }
  });

  test("last_used_at is written on authentication only when older than the touch interval", async (db) => {
    const [o1] = await owners(db);
    const issued = await ownedKeys.issue(db, o1, { nowMs: 1_000, randomBytes });
    const lastUsed = async () => (await ownedKeys.list(db, o1))[0]!.lastUsedAt?.getTime() ?? null;
    assert.equal(await lastUsed(), null, "never used yet");
    // Count the UPDATEs authentication sends: the point is not writing once per request.
    let updates = 0;
    const counting = {
      query: (text: string, params?: unknown[]) => {
        if (text.trimStart().startsWith("UPDATE")) updates++;
        return db.query(text, params);
      },
    } as Database;
    assert.equal(await ownedKeys.authenticate(counting, issued.key, 50_000), o1);
    assert.equal(await lastUsed(), 50_000);
    for (const nowMs of [50_001, 55_000, 59_999]) {
      assert.equal(await ownedKeys.authenticate(counting, issued.key, nowMs), o1);
    }
    assert.equal(updates, 1, "requests inside the interval write nothing");
    assert.equal(await lastUsed(), 50_000);
    assert.equal(await ownedKeys.authenticate(counting, issued.key, 50_000 + TOUCH_MS), o1);
    assert.equal(updates, 2, "a request once the interval has passed writes it again");
    assert.equal(await lastUsed(), 50_000 + TOUCH_MS);
    assert.equal(
      await ownedKeys.authenticate(counting, `${issued.prefix}_${"A".repeat(43)}`, 99_000),
      undefined,
    );
    assert.equal(updates, 2, "a wrong secret touches nothing");
  });

  test("authenticateMany: one SELECT and at most one UPDATE for a batch, each key answered as authenticate would", async (db) => {
    const [o1, o2] = await owners(db);
    const a = await ownedKeys.issue(db, o1, { nowMs: 1_000, randomBytes });
    const b = await ownedKeys.issue(db, o2, { nowMs: 1_000, randomBytes, expiresAtMs: 40_000 });
    const c = await ownedKeys.issue(db, o2, { nowMs: 1_000, randomBytes });
    await ownedKeys.revoke(db, o2, c.prefix, 2_000);
    const wrong = `${a.prefix}_${"A".repeat(43)}`;
    const unknown = scheme.issue(randomBytes).key;
    const statements: string[] = [];
    const counting = {
      query: (text: string, params?: unknown[]) => {
        statements.push(text.trimStart().split(" ")[0]!);
        return db.query(text, params);
      },
    } as Database;
    const batch = [a.key, b.key, wrong, unknown, "garbage", c.key, a.key];
    assert.deepEqual(await ownedKeys.authenticateMany(counting, batch, 30_000), [
      o1,
      o2,
      undefined,
      undefined,
      undefined,
      undefined,
      o1,
    ]);
    assert.deepEqual(statements, ["SELECT", "UPDATE"], "one read for seven keys, one touch for the two used");
    for (const key of batch)
      assert.equal(
        await ownedKeys.authenticate(db, key, 45_000),
        (await ownedKeys.authenticateMany(db, [key], 45_000))[0],
        key,
      );
    assert.equal((await ownedKeys.authenticateMany(db, [b.key], 45_000))[0], undefined, "expired");
    statements.length = 0;
    assert.deepEqual(await ownedKeys.authenticateMany(counting, [a.key, b.key], 30_000 + TOUCH_MS - 1), [
      o1,
      o2,
    ]);
    assert.deepEqual(statements, ["SELECT"], "touched within the interval: no UPDATE");
    statements.length = 0;
    assert.deepEqual(await ownedKeys.authenticateMany(counting, ["garbage"], 30_000), [undefined]);
    assert.deepEqual(statements, [], "nothing well-formed: no query");
  });

  test("authenticatePresented: a parsed key (prefix + sha256, no secret) is answered as the key itself would be", async (db) => {
    const [o1] = await owners(db);
    const a = await ownedKeys.issue(db, o1, { nowMs: 1_000, randomBytes });
    const b = await ownedKeys.issue(db, o1, { nowMs: 1_000, randomBytes });
    await ownedKeys.revoke(db, o1, b.prefix, 2_000);
    const parsed = scheme.parse(a.key);
    assert.deepEqual(parsed, { prefix: a.prefix, hash: a.hash });
    assert.deepEqual(
      await ownedKeys.authenticatePresented(
        db,
        [parsed, { prefix: a.prefix, hash: b.hash }, { prefix: b.prefix, hash: b.hash }, undefined],
        30_000,
      ),
      [o1, undefined, undefined, undefined],
      "the key's digest: its owner; another key's digest under its prefix: nobody; revoked: nobody",
    );
  });

  test("rotate: the new key is live at once, the old one until the overlap ends; revoke is recorded", async (db) => {
    const [o1, o2] = await owners(db);
    const old = await ownedKeys.issue(db, o1, { nowMs: 1_000, randomBytes });
    const rotated = await ownedKeys.rotate(db, o1, { nowMs: 2_000, randomBytes, overlapMs: 3_000 });
    assert.ok(rotated);
    assert.equal(rotated.previousExpireAtMs, 5_000);
    assert.equal(await ownedKeys.authenticate(db, rotated.key, 2_000), o1, "the new key works now");
    assert.equal(await ownedKeys.authenticate(db, old.key, 4_999), o1, "the old one through the overlap");
    assert.equal(await ownedKeys.authenticate(db, old.key, 5_000), undefined, "and not after");
    assert.equal(
      await ownedKeys.rotate(db, "o_nobody", { nowMs: 2_000, randomBytes, overlapMs: 0 }),
      undefined,
    );
    await assert.rejects(ownedKeys.rotate(db, o1, { nowMs: 2_000, randomBytes, overlapMs: -1 }), RangeError);
    const other = await ownedKeys.issue(db, o2, { nowMs: 1_000, randomBytes });
    assert.equal(await ownedKeys.revoke(db, o2, other.prefix, 7_000), true);
    const [info] = await ownedKeys.list(db, o2);
    assert.equal(info!.revokedAt?.getTime(), 7_000);
    assert.equal(info!.expiresAt?.getTime(), 7_000);
    const listed = await ownedKeys.list(db, o1);
    assert.deepEqual(
      listed.map((k) => [k.prefix, k.expiresAt?.getTime() ?? null, k.revokedAt]),
      [
        [rotated.prefix, null, null],
        [old.prefix, 5_000, null],
      ],
    );
  });
  test("register: a key made elsewhere authenticates; again is a no-op; another owner or secret is refused", async (db) => {
    const [o1, o2] = await owners(db);
    const made = scheme.issue(randomBytes);
    await db.transaction((tx) => keys.register(tx, o1, made.key, 1_000));
    await db.transaction((tx) => keys.register(tx, o1, made.key, 5_000));
    assert.equal(await keys.authenticate(db, made.key, 6_000), o1);
    const listed = await keys.list(db, o1);
    assert.deepEqual(
      listed.map((k) => [k.prefix, k.createdAt.getTime()]),
      [[made.prefix, 1_000]],
      "one row, from the first registration",
    );
    await assert.rejects(
      db.transaction((tx) => keys.register(tx, o2, made.key, 7_000)),
      /already registered/,
    );
    const sameIdOtherSecret = `${made.prefix}_${"B".repeat(43)}`;
    await assert.rejects(
      db.transaction((tx) => keys.register(tx, o1, sameIdOtherSecret, 7_000)),
      /already registered/,
    );
    await assert.rejects(
      db.transaction((tx) => keys.register(tx, o1, apiKeyScheme("sk").issue(randomBytes).key, 7_000)),
      /not a ok_… key/,
    );
    assert.equal(await keys.authenticate(db, made.key, 8_000), o1, "still the first owner's");
  });
});
