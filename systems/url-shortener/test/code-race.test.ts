/**
 * Codes raced by writer PROCESSES on the real PostgreSQL (ARCHITECTURE: every "never twice" is
 * raced by several processes on one engine):
 *
 * - US-05: 8 processes make 1,000,000 codes between them from one shared counter, in blocks
 *   of 1,000: 0 duplicates, exactly 1,000 counter calls (one per block), and every code
 *   inverts to a number the counter handed out.
 * - US-11: a writer SIGKILLed while holding a block leaves a gap of one block and nothing
 *   else: the writers after it never hand out its numbers, and no code repeats.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres } from "@casebook/lab/test-engines";
import { decodeBase62 } from "../src/domain/base62.ts";
import { FeistelPermutation, KEY_BYTES } from "../src/domain/feistel-permutation.ts";
import { migrateShortenerStore } from "../src/store/migrate.ts";
import { SqlCounter } from "../src/store/sql-counter.ts";

const CHILD = fileURLToPath(new URL("./code-race-child.ts", import.meta.url));
/** Bound on a child's whole run: generous for a loaded 2-core machine. */
const CHILD_WAIT_MS = 240_000;
const WRITERS = 8;
const TOTAL_CODES = 1_000_000;

async function world(t: { after(fn: () => unknown): void }, url: string) {
  const opened = await openPostgresTestSchema(url, {
    system: "url-shortener",
    prefix: "us_race",
    prepare: migrateShortenerStore,
  });
  const dir = await mkdtemp(join(tmpdir(), "casebook-us-race-"));
  const children: SpawnedChild[] = [];
  t.after(async () => {
    await Promise.all(children.map((child) => child.kill()));
    await opened.drop();
    await rm(dir, { recursive: true, force: true });
  });
  const key = randomBytes(KEY_BYTES);
  const spawn = async (out: string, mode: "write" | "hold", n = 0) => {
    const child = await spawnChild(CHILD, {
      args: [url, opened.schema, key.toString("hex"), join(dir, out), mode, String(n)],
      ready: "ready",
      readyTimeoutMs: CHILD_WAIT_MS,
      lineTimeoutMs: CHILD_WAIT_MS,
    });
    children.push(child);
    return child;
  };
  const codesOf = async (out: string) => (await readFile(join(dir, out), "utf8")).trimEnd().split("\n");
  return { db: opened.db, key, spawn, codesOf };
}

test("US-05 8 writer processes make 1,000,000 codes from one counter in blocks of 1,000: 0 duplicates, 1,000 counter calls", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const { db, key, spawn, codesOf } = await world(t, url);
  const perWriter = TOTAL_CODES / WRITERS;
  const writers = await Promise.all(
    Array.from({ length: WRITERS }, (_, i) => spawn(`w${i}`, "write", perWriter)),
  );
  for (const writer of writers) writer.send("go");
  const reports = await Promise.all(writers.map((writer) => writer.nextLine()));
  let counterCalls = 0;
  for (const report of reports) {
    const [word, made, calls] = report.split(" ");
    assert.equal(word, "done", report);
    assert.equal(Number(made), perWriter);
    counterCalls += Number(calls);
  }
  // One atomic add per 1,000 codes, and no more: the rest was local computation.
  assert.equal(counterCalls, TOTAL_CODES / 1_000);
  assert.equal(await new SqlCounter(db).current(), TOTAL_CODES);

  const permutation = new FeistelPermutation(key);
  const seen = new Set<string>();
  const numbers = new Set<number>();
  for (let i = 0; i < WRITERS; i++) {
    for (const code of await codesOf(`w${i}`)) {
      seen.add(code);
      const x = decodeBase62(code);
      assert.notEqual(x, undefined, code);
      numbers.add(permutation.invert(x!));
    }
  }
  assert.equal(seen.size, TOTAL_CODES, "a code was handed out twice");
  // Every number in [0, 1,000,000) once: the codes ARE the counter's numbers, scrambled.
  assert.equal(numbers.size, TOTAL_CODES);
  let max = -1;
  for (const n of numbers) max = Math.max(max, n);
  assert.equal(max, TOTAL_CODES - 1);
});

test("US-11 a writer killed while holding a block leaves a one-block gap: no duplicate, no wrong number", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const { db, key, spawn, codesOf } = await world(t, url);
  const holder = await spawn("held", "hold");
  holder.send("go");
  assert.equal(await holder.nextLine(), "holding 1");
  await holder.kill("SIGKILL");
  const after = await spawn("after", "write", 2_500);
  after.send("go");
  assert.equal(await after.nextLine(), "done 2500 3");
  const permutation = new FeistelPermutation(key);
  const numbers = (await codesOf("after")).map((code) => permutation.invert(decodeBase62(code)!));
  assert.equal(new Set(numbers).size, 2_500);
  // The dead writer's block [0, 1000) is never handed out again: the survivor starts past it.
  assert.equal(Math.min(...numbers), 1_000);
  assert.equal(Math.max(...numbers), 3_499);
  assert.equal(await new SqlCounter(db).current(), 4_000);
});
