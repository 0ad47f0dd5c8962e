/**
 * US-18 raced by two client PROCESSES on the real PostgreSQL: both insert the same 300 aliases
 * at once through the conditional insert (INSERT … ON CONFLICT DO NOTHING). Each alias is won
 * by exactly one of them — the other saw "taken" (the API's 409) — and the stored target is
 * the winner's.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres } from "@casebook/lab/test-engines";
import { migrateShortenerStore } from "../src/store/migrate.ts";

const CHILD = fileURLToPath(new URL("./alias-race-child.ts", import.meta.url));
const CHILD_WAIT_MS = 120_000;
const ALIASES = 300;

test("US-18 two processes racing for the same 300 aliases: each alias has exactly one winner, the other gets a conflict", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const opened = await openPostgresTestSchema(url, {
    system: "url-shortener",
    prefix: "us_alias",
    prepare: migrateShortenerStore,
  });
  const children: SpawnedChild[] = [];
  t.after(async () => {
    await Promise.all(children.map((child) => child.kill()));
    await opened.drop();
  });
  await opened.db.query("INSERT INTO workspaces (id, name, created_at) VALUES ('race', 'race', now())");
  for (const name of ["left", "right"]) {
    children.push(
      await spawnChild(CHILD, {
        args: [url, opened.schema, name, String(ALIASES)],
        ready: "ready",
        readyTimeoutMs: CHILD_WAIT_MS,
        lineTimeoutMs: CHILD_WAIT_MS,
      }),
    );
  }
  for (const child of children) child.send("go");
  const [left, right] = (await Promise.all(children.map((child) => child.nextLine()))).map(
    (line) => new Set(JSON.parse(line) as string[]),
  );
  for (let i = 0; i < ALIASES; i++) {
    const alias = `race-${i}`;
    assert.notEqual(left!.has(alias), right!.has(alias), `${alias}: exactly one winner`);
  }
  assert.equal(left!.size + right!.size, ALIASES);
  const { rows } = await opened.db.query<{ code: string; target: string }>("SELECT code, target FROM links");
  assert.equal(rows.length, ALIASES);
  for (const row of rows) {
    const winner = left!.has(row.code) ? "left" : "right";
    assert.equal(row.target, `https://${winner}.example/${row.code}`);
  }
});
