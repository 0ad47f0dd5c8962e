/**
 * The edge-log ingester's exactly-once (US-09, US-15), one suite on PGlite and the real
 * PostgreSQL: a line still being written waits for its newline; a round that fails after
 * reading rolls back with its position (the lines are counted by the next round, once); two
 * ingesters on one file — the replicas' case — queue on the cursor row and count each line
 * once; a rotated file is read from its start, after what is left of the old one at `path.1`
 * (rotated mid-stream: lines written after the last round, and by a worker not yet reopened,
 * each counted once); lines that are not visits are skipped and counted. The log is written here in the edge's `clicks` format.
 */
import assert from "node:assert/strict";
import { appendFile, mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Database } from "@casebook/infra/sql/sql";
import { contractSuite } from "@casebook/lab/contract-suite";
import { sqlBackends } from "@casebook/lab/sql-backends";
import { visitOfEdgeLine } from "../src/domain/edge-log-line.ts";
import { migrateShortenerStore } from "../src/store/migrate.ts";
import { EdgeLogIngester } from "../src/workers/edge-log-ingester.ts";

const T0 = Date.UTC(2026, 0, 1, 12) / 1_000;
const KEY = new Uint8Array(32).fill(7);

function line(i: number, code: string, overrides: Record<string, unknown> = {}): string {
  return `${JSON.stringify({
    t: T0 + i / 1_000,
    host: "s.example",
    uri: `/${code}`,
    status: 302,
    ref: "https://news.example/item",
    ua: "Mozilla/5.0 Chrome/131.0",
    ip: `10.0.0.${i % 250}`,
    id: `req${i}`,
    cache: i % 3 === 0 ? "MISS" : "HIT",
    ...overrides,
  })}\n`;
}

const lines = (from: number, to: number, code: string) =>
  Array.from({ length: to - from }, (_, k) => line(from + k, code)).join("");

async function counted(db: Database, code: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM clicks WHERE code = $1", [
    code,
  ]);
  return rows[0]!.n;
}

interface IngesterOptions {
  maxBytes?: number;
  domainOf?: (host: string) => string;
}

interface World {
  db: Database;
  /** Runs `body` with a log path in a fresh directory (removed after) and ingesters of it. */
  withLog(
    body: (log: { path: string; ingester(options?: IngesterOptions): EdgeLogIngester }) => Promise<void>,
  ): Promise<void>;
}

contractSuite<World>(
  "edge log ingester",
  sqlBackends({
    system: "url-shortener",
    prefix: "us_edgelog",
    prepare: (db) => migrateShortenerStore(db).then(() => undefined),
    subject: (db) => ({
      db,
      withLog: async (body) => {
        const dir = await mkdtemp(join(tmpdir(), "casebook-us-edgelog-"));
        const path = join(dir, "clicks.log");
        try {
          await body({
            path,
            ingester: (options: IngesterOptions = {}) =>
              new EdgeLogIngester({
                db,
                path,
                key: KEY,
                domainOf: options.domainOf ?? ((host) => host),
                intervalMs: 60_000,
                ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes }),
                onError: () => {},
              }),
          });
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      },
    }),
  }),
  (it) => {
    it("US-15 a half-written line waits for its newline; a failed round is read again, each line counted once", (world) =>
      world.withLog(async (log) => {
        const code = "halfline";
        const ingester = log.ingester();
        assert.deepEqual(await ingester.ingestOnce(), { lines: 0, skipped: 0, more: false }, "no log yet");
        const third = line(3, code);
        await appendFile(log.path, lines(0, 3, code) + third.slice(0, 40));
        assert.equal((await ingester.ingestOnce()).lines, 3);
        await appendFile(log.path, third.slice(40) + lines(4, 10, code));
        // A round that fails after reading (here: mapping a host throws) commits nothing.
        let calls = 0;
        const failing = log.ingester({
          domainOf: (host) => {
            if (calls++ === 2) throw new Error("the ingester dies mid-round");
            return host;
          },
        });
        await assert.rejects(failing.ingestOnce(), /dies mid-round/);
        assert.equal(await counted(world.db, code), 3);
        assert.equal((await ingester.ingestOnce()).lines, 7);
        assert.equal((await ingester.ingestOnce()).lines, 0);
        assert.equal(await counted(world.db, code), 10);
        const visit = visitOfEdgeLine(line(1, code), (h) => h)!;
        assert.equal(visit.atMs, Math.round((T0 + 0.001) * 1_000));
      }));

    it("US-09 two ingesters on one file (two replicas) count each line once; small chunks say more is waiting", (world) =>
      world.withLog(async (log) => {
        const code = "replicas";
        await appendFile(log.path, lines(0, 400, code));
        const [a, b] = [log.ingester({ maxBytes: 4_096 }), log.ingester({ maxBytes: 4_096 })];
        const drain = async (ingester: EdgeLogIngester) => {
          let total = 0;
          for (;;) {
            const round = await ingester.ingestOnce();
            total += round.lines;
            if (!round.more) return total;
          }
        };
        const [byA, byB] = await Promise.all([drain(a), drain(b)]);
        assert.equal(byA + byB, 400);
        assert.equal(await counted(world.db, code), 400);
      }));

    it("US-09 the log rotated mid-stream: the old file's tail (written after the last round, and by a worker not yet reopened) is read from path.1, then the new file; no click lost or counted twice", (world) =>
      world.withLog(async (log) => {
        const code = "rotmid";
        const ingester = log.ingester({ maxBytes: 2_048 });
        const drain = async () => {
          let total = 0;
          for (let i = 0; i < 1_000; i++) {
            const round = await ingester.ingestOnce();
            total += round.lines;
            if (!round.more) return total;
          }
          throw new Error("the ingester never caught up");
        };
        let next = 0;
        const write = async (path: string, n: number) => {
          await appendFile(path, lines(next, next + n, code));
          next += n;
        };
        await write(log.path, 30);
        assert.equal(await drain(), 30);
        // Written after the last round, then rotated (logrotate's rename); nginx has not reopened yet.
        await write(log.path, 25);
        await rename(log.path, `${log.path}.1`);
        await write(`${log.path}.1`, 5);
        assert.equal(await drain(), 30, "the old file's tail, with no file at the path yet");
        // nginx reopens (a new file at the path), one worker still writes to the old one for a while.
        await write(log.path, 10);
        await write(`${log.path}.1`, 3);
        await write(log.path, 40);
        assert.equal(await drain(), 53);
        await write(`${log.path}.1`, 2);
        await write(log.path, 7);
        assert.equal(await drain(), 9);
        // A second rotation: the new file becomes path.1 with a tail of its own; the first is path.2 now.
        await write(log.path, 12);
        await rename(`${log.path}.1`, `${log.path}.2`);
        await rename(log.path, `${log.path}.1`);
        await write(log.path, 8);
        assert.equal(await drain(), 20);
        assert.equal(await drain(), 0);
        assert.equal(await counted(world.db, code), next, "every line once");
        const { rows } = await world.db.query<{ n: number }>(
          "SELECT count(DISTINCT at)::int AS n FROM clicks WHERE code = $1",
          [code],
        );
        assert.equal(rows[0]!.n, next, "no line twice");
      }));

    it("a rotated log is read from its start; lines that are not visits are skipped and counted", (world) =>
      world.withLog(async (log) => {
        const code = "rotated";
        const ingester = log.ingester();
        await appendFile(log.path, lines(0, 5, code));
        assert.equal((await ingester.ingestOnce()).lines, 5);
        await rename(log.path, `${log.path}.1`);
        await appendFile(
          log.path,
          lines(5, 7, code) +
            "not json\n" +
            line(7, code, { uri: "/v1/links/x/y" }) +
            line(8, code, { status: "302" }) +
            line(9, code),
        );
        assert.deepEqual(await ingester.ingestOnce(), { lines: 3, skipped: 3, more: false });
        assert.equal(await counted(world.db, code), 8);
        const { rows } = await world.db.query<{ lines: number; skipped: number }>(
          "SELECT lines::int, skipped::int FROM edge_log_cursors WHERE path = $1",
          [log.path],
        );
        assert.deepEqual(rows[0], { lines: 8, skipped: 3 });
      }));
  },
);
