/**
 * The API key table on every SQL backend: the DDL helper's table, issue (a fresh prefix on a
 * collision), authenticate (unknown, wrong, expired, malformed all undefined), list, rotation
 * (expireAll) and revoke.
 */
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { apiKeyScheme } from "@casebook/kit/api-key";
import { contractSuite } from "@casebook/lab/contract-suite";
import { sqlBackends } from "@casebook/lab/sql-backends";
import { ApiKeyTable, apiKeyTableSql } from "../../src/sql/api-key-table.ts";
import { applyMigrations, migration } from "../../src/sql/migrations.ts";
import type { Database } from "../../src/sql/sql.ts";

const scheme = apiKeyScheme("ok");
const keys = new ApiKeyTable({ table: "owner_api_keys", ownerColumn: "owner_id", scheme });

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
});
