/**
 * The benchmark runs end to end, tiny: bench/main.ts as a child process (as `casebook bench
 * chat` runs it) on the machine's PostgreSQL and Redis, one socket.io server then chat's send
 * service and one gateway, each with its load-generator process, JSON lines out. This checks the
 * output's shape, that every message reached every member on both sides and that every client
 * came back after its server's crash and restart — never speed
 * (speed lives in the bench itself). The Centrifuge side runs the same way where Go and
 * Debian's centrifuge sources are installed (bench/centrifuge-build.ts), and skips naming the
 * apt-get line elsewhere (CI installs no Go).
 */
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseBenchRows, runBenchChild } from "@casebook/lab/bench-smoke";
import { requirePostgres, requireRedis } from "@casebook/lab/test-engines";
import { centrifugeMissing } from "../bench/centrifuge-build.ts";
import { benchHelp, parseBenchArgs } from "../bench/main.ts";

const benchMain = fileURLToPath(new URL("../bench/main.ts", import.meta.url));
/** Bound on one bench child: the tiny run takes ~20 s at load 25; a hang must fail the test. */
const childTimeoutMs = 120_000;
/** The Centrifuge run also builds the Go server first (~25 s cold on 2 cores). */
const centrifugeChildTimeoutMs = 240_000;
const tiny = [
  "--gateways",
  "1",
  "--clients",
  "12",
  "--group-size",
  "4",
  "--max-rate-per-s",
  "20",
  "--max-duration-ms",
  "800",
  "--max-runs",
  "1",
  "--max-warmup-runs",
  "1",
  "--duration-ms",
  "800",
  "--warmup-ms",
  "200",
  "--drain-ms",
  "3000",
];

/**
 * The bench run tiny with `sides` in a child process on the test engines, its JSON rows read;
 * undefined after skipping `t` when an engine is down.
 */
async function runTiny(t: TestContext, sides: string, timeoutMs: number) {
  const databaseUrl = await requirePostgres(t);
  const redisUrl = await requireRedis(t);
  if (!databaseUrl || !redisUrl) return undefined;
  // The bench reads its engines from DATABASE_URL and REDIS_URL (this test file's own process).
  process.env.DATABASE_URL = databaseUrl;
  process.env.REDIS_URL = redisUrl;
  const run = await runBenchChild(benchMain, ["--json", "--sides", sides, ...tiny], { timeoutMs });
  assert.equal(run.code, 0, run.stderr);
  const rows = parseBenchRows(run.stdout);
  return { stderr: run.stderr, rows, row: (metric: string) => rows.find((r) => r.metric === metric) };
}

describe("bench/main.ts", () => {
  test("--help names the peer, the runs and the flags; a bad flag is refused naming it", () => {
    for (const word of [
      "socket.io",
      "redis-streams-adapter",
      "--clients",
      "--group-size",
      "--load-percent",
    ]) {
      assert.ok(benchHelp.includes(word), `help mentions ${word}`);
    }
    assert.equal(parseBenchArgs(["--help"]).help, true);
    assert.throws(() => parseBenchArgs(["--group-size", "1"]), /--group-size/);
    assert.throws(() => parseBenchArgs(["--clients", "4", "--group-size", "5"]), /--group-size 5/);
    assert.throws(() => parseBenchArgs(["--sides", "socketio,centrifuge"]), /--sides/);
    assert.throws(() => parseBenchArgs(["--sides", "chat"]), /--sides chat/);
    assert.throws(() => parseBenchArgs(["--sides", "chat,nats"]), /nats/);
    assert.deepEqual(parseBenchArgs([]).sides, ["chat", "socketio", "centrifuge"]);
    assert.equal(parseBenchArgs([]).sidesExplicit, false);
    assert.deepEqual(parseBenchArgs(["--sides", "centrifuge,chat"]).sides, ["chat", "centrifuge"]);
    assert.equal(parseBenchArgs(["--sides", "chat,socketio"]).sidesExplicit, true);
  });

  test("--json prints chat's rows beside socket.io's, every delivery made on both sides", async (t) => {
    // socket.io alone: the Go build is the next test's, and CI has no Go.
    const ran = await runTiny(t, "chat,socketio", childTimeoutMs);
    if (!ran) return;
    const { rows, row } = ran;
    assert.ok(rows.every((r) => r.system === "chat" && r.peer === "socket.io + redis-streams-adapter"));
    assert.equal(row("connections held")?.value, 12);
    assert.equal(row("connections held")?.peer_value, 12);
    assert.ok((row("deliveries")?.value ?? 0) > 0 && (row("deliveries")?.peer_value ?? 0) > 0);
    assert.ok(row("send → deliver p99")?.ratio !== undefined, "p99 beside socket.io's");
    assert.equal(row("deliveries missing after the drain")?.value, 0);
    assert.equal(row("deliveries missing after the drain")?.peer_value, 0);
    // The one gateway (and the one socket.io server) crashed and restarted: every client came back.
    const resumed = row("clients resumed within 60 s");
    assert.equal(resumed?.scenario, "12 clients of a socket holder crashed and restarted");
    assert.equal(resumed?.value, 12);
    assert.equal(resumed?.peer_value, 12);
    assert.ok((row("time to resume them all (from the restart)")?.value ?? -1) >= 0);
  });

  test("--sides chat,centrifuge prints chat's rows beside Centrifuge's; every client resumed with its channels recovered", async (t) => {
    const missing = centrifugeMissing();
    if (missing !== undefined) return t.skip(`Centrifuge cannot be built here: ${missing}`);
    const ran = await runTiny(t, "chat,centrifuge", centrifugeChildTimeoutMs);
    if (!ran) return;
    const { rows, row } = ran;
    assert.ok(rows.every((r) => r.system === "chat" && r.peer === "centrifuge 0.15 (Go) + Redis broker"));
    assert.equal(row("connections held")?.peer_value, 12);
    assert.ok((row("deliveries")?.peer_value ?? 0) > 0);
    assert.equal(row("deliveries missing after the drain")?.peer_value, 0);
    assert.equal(row("send errors, both runs")?.peer_value, 0);
    assert.equal(row("clients resumed within 60 s")?.peer_value, 12);
    // Centrifugo's point: the clients of the crashed node recover from the channels' history.
    assert.match(
      ran.stderr,
      /centrifuge: 12 of 12 resumed, .*; 12 with every channel recovered from history/,
    );
  });
});
