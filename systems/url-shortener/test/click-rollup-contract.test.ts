/**
 * The click rollup adds, never rescans (US-15; issue 18: a day's bucket recomputed from the raw
 * log every round was a scan of the whole day's clicks every 10 s). One suite on PGlite and the
 * real PostgreSQL: appended clicks land in their hour and day buckets once, distinct visitors
 * counted once across batches, bots apart, orphans out; a round reads the pending rows only (a
 * row slipped into the log behind the append's back is not picked up); rounds are bounded; the
 * visitors of old buckets are forgotten; and two replicas rolling up while batches are appended,
 * on connections of their own, add each click once.
 */
import assert from "node:assert/strict";
import type { Database } from "@casebook/infra/sql/sql";
import { isRetryableTransactionError } from "@casebook/infra/sql/sql-state";
import { contractSuite } from "@casebook/lab/contract-suite";
import { sqlBackends } from "@casebook/lab/sql-backends";
import type { ClickRecord } from "../src/domain/click-record.ts";
import { ClickStore, VISITOR_RETENTION_MS } from "../src/store/click-store.ts";
import { migrateShortenerStore } from "../src/store/migrate.ts";

const DOMAIN = "s.example";
const HOUR_MS = 3_600_000;
/** 2026-01-01 10:00 UTC: the test's clock, so buckets are fixed. */
const T0 = Date.UTC(2026, 0, 1, 10);

function click(code: string, atMs: number, visitor: string, extra: Partial<ClickRecord> = {}): ClickRecord {
  return {
    atMs,
    domain: DOMAIN,
    code,
    status: 302,
    referrerHost: null,
    uaFamily: "chrome",
    bot: false,
    visitorHash: visitor,
    orphan: false,
    ...extra,
  };
}

interface Bucket {
  granularity: string;
  bucket_start: Date;
  clicks: number;
  bot_clicks: number;
  visitors: number;
}

async function buckets(db: Database, code: string): Promise<Bucket[]> {
  const { rows } = await db.query<Bucket>(
    `SELECT granularity, bucket_start, clicks::int AS clicks, bot_clicks::int AS bot_clicks, visitors::int AS visitors
       FROM click_rollups WHERE domain = $1 AND code = $2 ORDER BY granularity, bucket_start`,
    [DOMAIN, code],
  );
  return rows;
}

async function count(db: Database, sql: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(sql);
  return rows[0]!.n;
}

contractSuite<Database>(
  "click rollup",
  sqlBackends({
    system: "url-shortener",
    prefix: "us_rollup",
    prepare: (db) => migrateShortenerStore(db).then(() => undefined),
    subject: (db) => db,
  }),
  (it) => {
    it("US-15 appended clicks are added to their hour and day buckets once; visitors across batches once; bots apart; orphans out", async (db) => {
      const store = new ClickStore(db);
      const code = "added";
      await store.append([
        click(code, T0 + 60_000, "ana"),
        click(code, T0 + 61_000, "ana"),
        click(code, T0 + 62_000, "bia"),
        click(code, T0 + HOUR_MS + 5_000, "ana"),
        click(code, T0 + 63_000, "crawler", { bot: true, uaFamily: "bot" }),
        click(code, T0 + 64_000, "ana", { orphan: true, status: 404 }),
      ]);
      assert.equal(
        await store.rollup(T0),
        4,
        "pending rows per hour, link, bot and visitor: ana's two of the hour are one",
      );
      await store.append([click(code, T0 + 120_000, "ana"), click(code, T0 + 121_000, "cai")]);
      await store.rollup(T0);
      assert.equal(await store.rollup(T0), 0, "nothing left: a round adds nothing twice");
      const hour = (start: number, clicks: number, bots: number, visitors: number) => ({
        granularity: "hour",
        bucket_start: new Date(start),
        clicks,
        bot_clicks: bots,
        visitors,
      });
      assert.deepEqual(await buckets(db, code), [
        {
          granularity: "day",
          bucket_start: new Date(Date.UTC(2026, 0, 1)),
          clicks: 6,
          bot_clicks: 1,
          visitors: 3,
        },
        hour(T0, 5, 1, 3),
        hour(T0 + HOUR_MS, 1, 0, 1),
      ]);
      assert.deepEqual(
        await store.rawTotals(DOMAIN, code),
        { clicks: 6, botClicks: 1 },
        "the rollup = the raw log",
      );
      assert.equal(await count(db, "SELECT count(*)::int AS n FROM click_rollup_pending"), 0);
    });

    it("US-15 a round reads the pending rows only, never the log; rounds are bounded; old buckets' visitors are forgotten", async (db) => {
      const store = new ClickStore(db);
      const code = "bounded";
      await store.append(Array.from({ length: 7 }, (_, i) => click(code, T0 + i * 1_000, `v${i}`)));
      // A row in the log the append did not write (as if it were there before): no round sees it.
      await db.query(
        `INSERT INTO clicks (at, domain, code, status, referrer_host, ua_family, bot, visitor_hash, orphan)
         VALUES ($1, $2, $3, 302, NULL, 'chrome', false, 'ghost', false)`,
        [new Date(T0), DOMAIN, code],
      );
      assert.equal(await store.rollup(T0, 3), 3, "a round takes at most maxRows");
      assert.equal(await store.rollup(T0, 3), 3);
      assert.equal(await store.rollup(T0, 3), 1);
      assert.equal((await buckets(db, code)).find((b) => b.granularity === "hour")!.clicks, 7);
      assert.equal(
        await count(db, `SELECT count(*)::int AS n FROM click_rollup_visitors WHERE code = 'bounded'`),
        14,
      );
      await store.rollup(T0 + VISITOR_RETENTION_MS + 2 * 86_400_000);
      assert.equal(
        await count(db, `SELECT count(*)::int AS n FROM click_rollup_visitors WHERE code = 'bounded'`),
        0,
        "the visitors of buckets older than the retention are deleted",
      );
      assert.equal((await buckets(db, code)).length, 2, "the buckets themselves stay");
    });

    it("US-15 two replicas rolling up while batches are appended, each on its own connection, add each click once", async (db) => {
      const code = "raced";
      const writer = new ClickStore(db);
      const replicas = [new ClickStore(db), new ClickStore(db)];
      const batches = 20;
      const perBatch = 50;
      let appending = true;
      const appends = (async () => {
        for (let b = 0; b < batches; b++) {
          await writer.append(
            Array.from({ length: perBatch }, (_, i) =>
              click(code, T0 + (b * perBatch + i) * 1_000, `v${(b * perBatch + i) % 300}`, {
                bot: i % 10 === 0,
              }),
            ),
          );
        }
        appending = false;
      })();
      // Small rounds, so the replicas' DELETEs meet on the same pending rows.
      const rollups = replicas.map(async (replica) => {
        let rounds = 0;
        for (;;) {
          let taken: number;
          try {
            taken = await replica.rollup(T0, 40);
          } catch (error) {
            // Two rounds adding to the same buckets can deadlock on PostgreSQL: one statement is
            // rolled back whole (40P01) and its rows wait for the next round, as the worker's loop does.
            if (!isRetryableTransactionError(error)) throw error;
            continue;
          }
          rounds += 1;
          if (!appending && taken === 0) return rounds;
        }
      });
      await appends;
      const rounds = await Promise.all(rollups);
      // How the rounds interleave is the scheduler's (one replica may find the appends done at its
      // first round); what must hold whatever the interleaving is below: every click once.
      assert.ok(
        rounds[0]! + rounds[1]! > 2,
        `the replicas rolled up while batches were appended (${rounds})`,
      );
      while ((await writer.rollup(T0)) > 0) {} // what a replica left when the other held its rows
      const total = batches * perBatch;
      const bots = total / 10;
      const day = (await buckets(db, code)).find((b) => b.granularity === "day")!;
      assert.equal(day.clicks + day.bot_clicks, total, "every click once");
      assert.equal(day.bot_clicks, bots);
      const { rows } = await db.query<{ n: number }>(
        "SELECT count(DISTINCT visitor_hash)::int AS n FROM clicks WHERE code = $1 AND NOT bot",
        [code],
      );
      assert.equal(day.visitors, rows[0]!.n, "each visitor once");
      const hours = (await buckets(db, code)).filter((b) => b.granularity === "hour");
      assert.equal(
        hours.reduce((sum, b) => sum + b.clicks + b.bot_clicks, 0),
        total,
        "the hours add up to the day",
      );
    });
  },
);
