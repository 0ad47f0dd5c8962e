/**
 * Ring mode when a node dies (CA-03: "nodes join and leave without restarting clients" —
 * the seed's requirement 4 names failures as one way nodes leave; CA-22 for the proxy):
 * - with `ejection`, a killed node leaves the running client's ring after `failureLimit`
 *   link failures; only its keys move, to the survivors, and the other keys never miss;
 *   no command waits for the dead node past the connect timeout; restarted on its address,
 *   one PING probe brings it back and its keys route to it again;
 * - with a `gutter` pool (mcrouter), its keys go to the gutter instead — reads miss there
 *   rather than fail, even before the ejection — and everything written to the gutter has
 *   a TTL of at most `ttlS`; the other ring nodes never receive its keys;
 * - the routing proxy, given such a router, behaves the same for a stock client.
 * Plus the pure parts: the ejection bookkeeping (limit, last node kept, backoff) and the
 * gutter's command rewriting (which commands go, how TTLs are capped).
 *
 * Nothing here sleeps to wait: rounds of commands are awaited, probes are awaited as events
 * (with a generous bound that only a broken build reaches).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startFaultProxy } from "@casebook/lab/fault-proxy";
import { CacheClient } from "../src/client/cache-client.ts";
import { clientErrors } from "../src/client/client-errors.ts";
import { combineGutterReplies, planGutterCommand } from "../src/client/gutter-command.ts";
import type { RouterEvent } from "../src/client/key-router.ts";
import { NodeConnection } from "../src/client/node-connection.ts";
import { NodeEjection } from "../src/client/node-ejection.ts";
import { ErrorReply, StatusReply } from "../src/client/reply-parser.ts";
import { RingRouter } from "../src/client/ring-router.ts";
import { NO_EXPIRY } from "../src/domain/cache-entry.ts";
import { proxyWireOptions, RoutingProxy } from "../src/workers/routing-proxy.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

const address = (node: TestNode) => `127.0.0.1:${node.port}`;
const KEYS = Array.from({ length: 600 }, (_, i) => `seat:${i}`);
/** Rounds of reads before an ejection must have happened (failureLimit is 2 or 3 here). */
const MAX_ROUNDS = 8;
/** Bound on waiting for a probe to readmit a restarted node: the backoff cap is 800 ms. */
const READMIT_BOUND_MS = 15_000;

/** Router events, with a way to await one that has happened or is still to come. */
class EventLog {
  readonly events: RouterEvent[] = [];
  readonly #waiters: { match: (event: RouterEvent) => boolean; resolve: (event: RouterEvent) => void }[] = [];

  readonly push = (event: RouterEvent): void => {
    this.events.push(event);
    for (const waiter of this.#waiters.filter((w) => w.match(event))) {
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve(event);
    }
  };

  /** The first matching event; rejects after `boundMs` (a broken build, not a slow one). */
  waitFor(match: (event: RouterEvent) => boolean, boundMs: number): Promise<RouterEvent> {
    const seen = this.events.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no matching router event within ${boundMs} ms`)),
        boundMs,
      );
      this.#waiters.push({
        match,
        resolve: (event) => {
          clearTimeout(timer);
          resolve(event);
        },
      });
    });
  }

  ofType<T extends RouterEvent["type"]>(type: T): Extract<RouterEvent, { type: T }>[] {
    return this.events.filter((event): event is Extract<RouterEvent, { type: T }> => event.type === type);
  }
}

interface Outcome {
  readonly key: string;
  readonly value: string | null | undefined;
  readonly error: unknown;
  readonly ms: number;
}

/** One GET per key, all issued in one turn (one connection attempt per node), each timed. */
function readAll(client: CacheClient, keys: readonly string[]): Promise<Outcome[]> {
  return Promise.all(
    keys.map(async (key) => {
      const startMs = performance.now();
      try {
        const value = await client.get(key);
        return { key, value, error: undefined, ms: performance.now() - startMs };
      } catch (error) {
        return { key, value: undefined, error, ms: performance.now() - startMs };
      }
    }),
  );
}

const isLinkError = (error: unknown) =>
  clientErrors.is(error, "CACHE_CLIENT_CONNECT_FAILED") ||
  clientErrors.is(error, "CACHE_CLIENT_CONNECTION_LOST");

describe("node ejection bookkeeping", () => {
  test("CA-03 failureLimit consecutive failures eject; a reply in between starts the count over", () => {
    const ejection = new NodeEjection({ failureLimit: 3, retryAfterMs: 100, maxRetryAfterMs: 1_000 });
    assert.deepEqual(ejection.recordFailure("a:1", 0, true), { verdict: "counted", failures: 1 });
    assert.deepEqual(ejection.recordFailure("a:1", 0, true), { verdict: "counted", failures: 2 });
    ejection.recordSuccess("a:1");
    assert.equal(ejection.failures("a:1"), 0, "a reply proves the node alive");
    ejection.recordFailure("a:1", 0, true);
    ejection.recordFailure("a:1", 0, true);
    assert.deepEqual(ejection.recordFailure("a:1", 0, true), {
      verdict: "eject",
      failures: 3,
      retryAfterMs: 100,
    });
    assert.equal(ejection.isEjected("a:1"), true);
    ejection.recordSuccess("a:1");
    assert.equal(ejection.isEjected("a:1"), true, "a late reply does not readmit: only the probe does");
  });

  test("the last routable node is kept; failed probes and a quick re-ejection back off to the cap; a stable node starts over", () => {
    const ejection = new NodeEjection({
      failureLimit: 1,
      retryAfterMs: 100,
      maxRetryAfterMs: 500,
      stableAfterMs: 1_000,
    });
    assert.deepEqual(ejection.recordFailure("last:1", 0, false), { verdict: "kept", failures: 1 });
    assert.equal(ejection.isEjected("last:1"), false);
    assert.equal(ejection.recordFailure("a:1", 0, true).verdict, "eject");
    assert.deepEqual(
      [1, 2, 3, 4].map(() => ejection.probeFailed("a:1")),
      [200, 400, 500, 500],
    );
    ejection.readmit("a:1", 10_000);
    const flap = ejection.recordFailure("a:1", 10_500, true);
    assert.equal(
      flap.verdict === "eject" && flap.retryAfterMs,
      500,
      "ejected again 500 ms after return: flapping",
    );
    ejection.readmit("a:1", 20_000);
    const stable = ejection.recordFailure("a:1", 21_000, true);
    assert.equal(
      stable.verdict === "eject" && stable.retryAfterMs,
      100,
      "up for stableAfterMs: a fresh start",
    );
    assert.throws(
      () => new NodeEjection({ failureLimit: 0 }),
      (error) => clientErrors.is(error, "CACHE_CLIENT_CONFIG_INVALID"),
    );
  });
});

describe("gutter command plans: what goes to the gutter and how its TTL is capped", () => {
  const nowMs = 1_700_000_000_000;
  const sent = (args: readonly string[], ttlS = 10) => {
    const plan = planGutterCommand(args, ttlS, nowMs);
    assert.equal(plan.kind, "send", JSON.stringify(plan));
    return plan.kind === "send" ? plan.commands.map((command) => command.args) : [];
  };
  const answered = (args: readonly string[]) => {
    const plan = planGutterCommand(args, 10, nowMs);
    return plan.kind === "reply" ? plan.reply.message : `not answered: ${plan.kind}`;
  };

  test("SET: a TTL beyond ttlS, no TTL or KEEPTTL becomes EX ttlS; a shorter one stays; NX/XX/GET stay", () => {
    assert.deepEqual(sent(["SET", "k", "v", "EX", "300"]), [["SET", "k", "v", "EX", "10"]]);
    assert.deepEqual(sent(["SET", "k", "v", "px", "10001"]), [["SET", "k", "v", "EX", "10"]]);
    assert.deepEqual(sent(["SET", "k", "v"]), [["SET", "k", "v", "EX", "10"]]);
    assert.deepEqual(sent(["SET", "k", "v", "KEEPTTL"]), [["SET", "k", "v", "EX", "10"]]);
    assert.deepEqual(sent(["SET", "k", "v", "NX", "GET", "EX", "60"]), [
      ["SET", "k", "v", "NX", "GET", "EX", "10"],
    ]);
    assert.deepEqual(sent(["SET", "k", "v", "XX", "PX", "5000"]), [["SET", "k", "v", "XX", "PX", "5000"]]);
    assert.deepEqual(sent(["SET", "k", "v", "EX", "10"]), [["SET", "k", "v", "EX", "10"]]);
    const farAtS = String(nowMs / 1000 + 3_600);
    const nearAtMs = String(nowMs + 2_000);
    assert.deepEqual(sent(["SET", "k", "v", "EXAT", farAtS]), [["SET", "k", "v", "EX", "10"]]);
    assert.deepEqual(sent(["SET", "k", "v", "PXAT", nearAtMs]), [["SET", "k", "v", "PXAT", nearAtMs]]);
  });

  test("SET the node would refuse is answered with the node's own error line, never rewritten into one it accepts", () => {
    assert.equal(answered(["SET", "k", "v", "EX", "0"]), "ERR invalid expire time in 'set' command");
    assert.equal(answered(["SET", "k", "v", "EX", "abc"]), "ERR value is not an integer or out of range");
    assert.equal(answered(["SET", "k", "v", "NX", "XX"]), "ERR syntax error");
    assert.equal(answered(["SET", "k", "v", "EX"]), "ERR syntax error");
    assert.equal(answered(["SET", "k"]), "ERR wrong number of arguments for 'set' command");
    assert.equal(answered(["MSET", "a", "1", "b"]), "ERR wrong number of arguments for 'mset' command");
    assert.equal(answered(["EXPIRE", "k", "soon"]), "ERR value is not an integer or out of range");
  });

  test("EXPIRE family capped as PEXPIRE ttlMs (flags kept); counters get PEXPIRE ttlMs LT; MSET becomes capped SETs", () => {
    assert.deepEqual(sent(["EXPIRE", "k", "300"]), [["PEXPIRE", "k", "10000"]]);
    assert.deepEqual(sent(["EXPIRE", "k", "5", "NX"]), [["EXPIRE", "k", "5", "NX"]]);
    assert.deepEqual(sent(["PEXPIREAT", "k", String(nowMs + 60_000), "GT"]), [
      ["PEXPIRE", "k", "10000", "GT"],
    ]);
    assert.deepEqual(sent(["EXPIREAT", "k", String(nowMs / 1000 + 3)]), [
      ["EXPIREAT", "k", String(nowMs / 1000 + 3)],
    ]);
    assert.deepEqual(sent(["INCRBY", "n", "5"]), [
      ["INCRBY", "n", "5"],
      ["PEXPIRE", "n", "10000", "LT"],
    ]);
    assert.deepEqual(sent(["MSET", "a", "1", "b", "2"]), [
      ["SET", "a", "1", "EX", "10"],
      ["SET", "b", "2", "EX", "10"],
    ]);
  });

  test("multi-key reads and deletes are split per key and gathered; PERSIST and keyless commands are refused", () => {
    assert.deepEqual(sent(["MGET", "a", "b"]), [
      ["GET", "a"],
      ["GET", "b"],
    ]);
    assert.deepEqual(sent(["DEL", "a", "b"]), [
      ["DEL", "a"],
      ["DEL", "b"],
    ]);
    assert.deepEqual(sent(["GET", "a"]), [["GET", "a"]]);
    assert.deepEqual(planGutterCommand(["PERSIST", "k"], 10, nowMs), { kind: "refuse", command: "persist" });
    assert.deepEqual(planGutterCommand(["FLUSHALL"], 10, nowMs), { kind: "refuse", command: "flushall" });
    assert.deepEqual(combineGutterReplies("array", ["1", null]), ["1", null]);
    assert.equal(combineGutterReplies("sum", [1, 0, 1]), 2);
    assert.equal(combineGutterReplies("first", [7, 1]), 7);
    const ok = new StatusReply("OK");
    assert.equal(combineGutterReplies("all-ok", [ok, ok]), ok);
    const oom = new ErrorReply("OOM command not allowed");
    assert.equal(combineGutterReplies("all-ok", [ok, oom]), oom);
  });
});

describe("ejection over live nodes: a killed node's keys move to the survivors", () => {
  const CONNECT_TIMEOUT_MS = 2_000;
  let nodes: TestNode[];
  let client: CacheClient;
  const log = new EventLog();
  before(async () => {
    nodes = await Promise.all(Array.from({ length: 4 }, () => startCacheNode()));
    client = CacheClient.ring({
      nodes: nodes.map(address),
      vnodes: 160,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      commandTimeoutMs: CONNECT_TIMEOUT_MS,
      ejection: { failureLimit: 3, retryAfterMs: 200, maxRetryAfterMs: 800 },
      onEvent: log.push,
    });
  });
  after(async () => {
    await client?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });
  const ring = () => client.router as RingRouter;

  test("CA-03 a killed node leaves the running client after failureLimit=3 link failures: only its keys move, the others never miss, nothing waits past the connect timeout", async (t) => {
    await Promise.all(KEYS.map((key) => client.set(key, key, { exS: 300 })));
    const victim = address(nodes[1]!);
    const itsKeys = new Set(KEYS.filter((key) => ring().ownerOf(key) === victim));
    assert.ok(itsKeys.size > 60, `the victim owns a share of the keys: ${itsKeys.size}`);
    await nodes[1]!.close();

    const failedRounds: number[] = [];
    let slowestMs = 0;
    for (let round = 1; round <= MAX_ROUNDS && !ring().isEjected(victim); round++) {
      const outcomes = await readAll(client, KEYS);
      for (const outcome of outcomes) {
        slowestMs = Math.max(slowestMs, outcome.ms);
        if (itsKeys.has(outcome.key)) {
          assert.ok(isLinkError(outcome.error), `${outcome.key}: a typed link error before the ejection`);
        } else {
          assert.equal(outcome.value, outcome.key, `${outcome.key} never misses`);
        }
      }
      if (outcomes.some((outcome) => outcome.error !== undefined)) failedRounds.push(round);
    }
    assert.deepEqual(failedRounds, [1, 2, 3], "one failed connection per round; ejected at the 3rd");
    const [eject] = log.ofType("eject");
    assert.deepEqual(eject, { type: "eject", address: victim, failures: 3, retryAfterMs: 200 });
    assert.deepEqual([...ring().nodes()].sort(), [0, 2, 3].map((i) => address(nodes[i]!)).sort());
    assert.ok(ring().members().includes(victim), "still a member: ejection is not removal");

    const afterEjection = await readAll(client, KEYS);
    for (const outcome of afterEjection) {
      slowestMs = Math.max(slowestMs, outcome.ms);
      assert.equal(outcome.error, undefined, `${outcome.key} does not fail any more`);
      if (itsKeys.has(outcome.key)) {
        assert.equal(outcome.value, null, `${outcome.key} misses on a survivor that never had it`);
        assert.notEqual(ring().ownerOf(outcome.key), victim);
      } else {
        assert.equal(outcome.value, outcome.key, `${outcome.key} still hits`);
      }
    }
    t.diagnostic(
      `victim owned ${itsKeys.size} of ${KEYS.length} keys; failed rounds ${failedRounds.join(",")}; slowest command ${slowestMs.toFixed(1)} ms`,
    );
    assert.ok(slowestMs < CONNECT_TIMEOUT_MS, `no command waited past the connect timeout: ${slowestMs} ms`);
    // The database refills the moved keys on their new owners (cache-aside).
    await Promise.all([...itsKeys].map((key) => client.set(key, key, { exS: 300 })));
    const survivorsHold = [0, 2, 3].reduce((sum, i) => sum + nodes[i]!.keyspace.size, 0);
    assert.equal(survivorsHold, KEYS.length, "every key now lives on a survivor");
  });

  test("CA-03 the node restarts on its address: a PING probe readmits it (failed probes backing off to the cap) and its keys route to it again", async (t) => {
    const victim = address(nodes[1]!);
    // Stay dead through two failed probes (waits 200 → 400 → 800 ms) before coming back.
    await log.waitFor((event) => event.type === "probe" && event.retryAfterMs === 800, READMIT_BOUND_MS);
    nodes[1] = await startCacheNode({ server: { port: nodes[1]!.port } });
    await log.waitFor((event) => event.type === "readmit" && event.address === victim, READMIT_BOUND_MS);
    const failedProbes = log.ofType("probe").filter((probe) => !probe.ok);
    t.diagnostic(
      `failed probes before the restart: waits ${failedProbes.map((p) => p.retryAfterMs).join(", ")} ms`,
    );
    assert.ok(failedProbes.length >= 2, "probed while it was down");
    failedProbes.forEach((probe, i) => {
      assert.equal(
        probe.retryAfterMs,
        Math.min(800, 200 * 2 ** (i + 1)),
        "each failed probe doubles the wait",
      );
    });
    assert.equal(ring().isEjected(victim), false);
    assert.ok(ring().nodes().includes(victim));

    const returning = KEYS.filter((key) => ring().ownerOf(key) === victim);
    assert.ok(returning.length > 60, `its arcs are its own again: ${returning.length} keys`);
    const values = await client.mget(KEYS);
    const returningSet = new Set(returning);
    KEYS.forEach((key, i) => {
      if (returningSet.has(key)) assert.equal(values[i], null, `${key} misses on the restarted (empty) node`);
      else assert.equal(values[i], key, `${key} still hits`);
    });
    await Promise.all(returning.map((key) => client.set(key, key, { exS: 300 })));
    assert.equal(nodes[1]!.keyspace.size, returning.length, "its keys are stored on it again");
  });
});

describe("ejection of a node that stops answering", () => {
  const COMMAND_TIMEOUT_MS = 1_000;
  let nodes: TestNode[];
  let client: CacheClient;
  let link: Awaited<ReturnType<typeof startFaultProxy>>;
  const log = new EventLog();
  before(async () => {
    nodes = await Promise.all(Array.from({ length: 3 }, () => startCacheNode()));
    link = await startFaultProxy({ upstream: address(nodes[0]!) });
    client = CacheClient.ring({
      nodes: [`127.0.0.1:${link.port}`, address(nodes[1]!), address(nodes[2]!)],
      connectTimeoutMs: COMMAND_TIMEOUT_MS,
      commandTimeoutMs: COMMAND_TIMEOUT_MS,
      ejection: { failureLimit: 2, retryAfterMs: 60_000 },
      onEvent: log.push,
    });
  });
  after(async () => {
    await client?.close();
    await link?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  test("CA-03 a silent node (link open, no replies) is ejected after failureLimit=2 reply timeouts; its callers wait about the command timeout, the others not at all", async (t) => {
    await Promise.all(KEYS.map((key) => client.set(key, key, { exS: 300 })));
    const silent = `127.0.0.1:${link.port}`;
    const router = client.router as RingRouter;
    const itsKeys = new Set(KEYS.filter((key) => router.ownerOf(key) === silent));
    link.blackhole(true);
    let rounds = 0;
    let slowestMs = 0;
    for (let round = 1; round <= MAX_ROUNDS && !router.isEjected(silent); round++) {
      rounds = round;
      for (const outcome of await readAll(client, KEYS)) {
        slowestMs = Math.max(slowestMs, outcome.ms);
        if (itsKeys.has(outcome.key)) {
          assert.ok(clientErrors.is(outcome.error, "CACHE_CLIENT_TIMEOUT"), `${outcome.key} times out`);
        } else {
          assert.equal(outcome.value, outcome.key, `${outcome.key} never misses`);
        }
      }
    }
    assert.equal(rounds, 2, "one timed-out link per round: ejected at the 2nd");
    assert.deepEqual(
      log.ofType("eject").map((event) => event.address),
      [silent],
    );
    const afterEjection = await readAll(client, KEYS);
    assert.ok(
      afterEjection.every((o) => o.error === undefined && o.value === (itsKeys.has(o.key) ? null : o.key)),
    );
    const slowestAfterMs = Math.max(...afterEjection.map((o) => o.ms));
    t.diagnostic(
      `slowest command while silent ${slowestMs.toFixed(0)} ms; after ejection ${slowestAfterMs.toFixed(1)} ms`,
    );
    // The bound is the timeout itself, plus room for a loaded machine's timer lateness.
    assert.ok(slowestMs < COMMAND_TIMEOUT_MS + 1_000, `bounded by the command timeout: ${slowestMs} ms`);
  });
});

describe("ejection never takes the last node", () => {
  let nodes: TestNode[];
  let client: CacheClient;
  const log = new EventLog();
  before(async () => {
    nodes = await Promise.all([startCacheNode(), startCacheNode()]);
    client = CacheClient.ring({
      nodes: nodes.map(address),
      connectTimeoutMs: 2_000,
      commandTimeoutMs: 2_000,
      ejection: { failureLimit: 2, retryAfterMs: 60_000 },
      onEvent: log.push,
    });
  });
  after(async () => {
    await client?.close();
    // Closed by the test; closing again only matters when it failed before that.
    await Promise.all((nodes ?? []).map((node) => node.close().catch(() => {})));
  });

  test("both nodes killed: one is ejected, the last stays on the ring and its commands fail fast with typed errors", async () => {
    await Promise.all(KEYS.map((key) => client.set(key, key, { exS: 300 })));
    await Promise.all(nodes.map((node) => node.close()));
    for (let round = 1; round <= 4; round++) {
      const outcomes = await readAll(client, KEYS);
      for (const outcome of outcomes) {
        assert.ok(isLinkError(outcome.error), `round ${round}: ${outcome.key} fails with a typed link error`);
        assert.ok(outcome.ms < 2_000, "refused connections fail at once, not after a timeout");
      }
    }
    assert.equal(log.ofType("eject").length, 1, "one node ejected");
    assert.equal(log.ofType("eject-skipped").length, 1, "the other reached the limit but stays");
    const router = client.router as RingRouter;
    assert.equal(router.nodes().length, 1, "one node still routable");
    assert.equal(router.members().length, 2);
  });
});

describe("gutter pool over live nodes: a killed node's keys go to the gutter, TTLs capped", () => {
  const TTL_S = 10;
  let ringNodes: TestNode[];
  let gutterNodes: TestNode[];
  let client: CacheClient;
  const log = new EventLog();
  before(async () => {
    ringNodes = await Promise.all(Array.from({ length: 3 }, () => startCacheNode()));
    gutterNodes = await Promise.all([startCacheNode(), startCacheNode()]);
    client = CacheClient.ring({
      nodes: ringNodes.map(address),
      connectTimeoutMs: 2_000,
      commandTimeoutMs: 2_000,
      ejection: { failureLimit: 2, retryAfterMs: 200, maxRetryAfterMs: 400 },
      gutter: { nodes: gutterNodes.map(address), ttlS: TTL_S },
      onEvent: log.push,
    });
  });
  after(async () => {
    await client?.close();
    await Promise.all([...(ringNodes ?? []), ...(gutterNodes ?? [])].map((node) => node.close()));
  });
  const ring = () => client.router as RingRouter;

  test("CA-03 reads of a killed node's keys miss on the gutter instead of failing (before and after the ejection); the other ring nodes never get its keys", async () => {
    await Promise.all(KEYS.map((key) => client.set(key, key, { exS: 300 })));
    const victim = address(ringNodes[0]!);
    const itsKeys = new Set(KEYS.filter((key) => ring().ownerOf(key) === victim));
    assert.ok(itsKeys.size > 60, `the victim owns a share: ${itsKeys.size}`);
    await ringNodes[0]!.close();

    let rounds = 0;
    for (let round = 1; round <= MAX_ROUNDS && !ring().isEjected(victim); round++) {
      rounds = round;
      for (const outcome of await readAll(client, KEYS)) {
        assert.equal(outcome.error, undefined, `${outcome.key}: no command fails, the gutter answers`);
        assert.equal(outcome.value, itsKeys.has(outcome.key) ? null : outcome.key, outcome.key);
      }
    }
    assert.equal(rounds, 2, "ejected after failureLimit=2 failed connections");
    assert.ok(log.ofType("gutter").every((event) => event.reason === "failed" && event.owner === victim));
    log.events.length = 0;

    const afterEjection = await readAll(client, KEYS);
    assert.ok(afterEjection.every((o) => o.value === (itsKeys.has(o.key) ? null : o.key)));
    assert.equal(log.ofType("gutter").length, itsKeys.size, "each of its keys went straight to the gutter");
    assert.ok(log.ofType("gutter").every((event) => event.reason === "ejected"));
    assert.ok(
      log.ofType("send").every((event) => event.address !== victim),
      "nothing is sent to the dead node",
    );
    assert.equal(ring().nodes().includes(victim), false);
    assert.equal(ring().ownerOf([...itsKeys][0]!), victim, "with a gutter the ring itself does not change");
  });

  test("CA-03 every write to the gutter carries a TTL of at most ttlS (SET EX 300, SET without TTL, INCRBY, EXPIRE, MSET); PERSIST is refused", async () => {
    const victim = address(ringNodes[0]!);
    const itsKeys = KEYS.filter((key) => ring().ownerOf(key) === victim);
    const [counter, expiring, msetA, msetB, plain, ...rest] = itsKeys;
    await Promise.all(rest.map((key) => client.set(key, `g-${key}`, { exS: 300 })));
    await client.set(plain!, "no ttl asked");
    assert.equal(await client.incrby(counter!, 5), 5);
    await client.set(expiring!, "x");
    assert.equal(await client.command(expiring!, ["EXPIRE", expiring!, "3600"]), 1);
    await client.command(msetA!, ["MSET", msetA!, "a", msetB!, "b"]);
    await assert.rejects(client.command(plain!, ["PERSIST", plain!]), (error) =>
      clientErrors.is(error, "CACHE_CLIENT_GUTTER_REFUSED"),
    );

    const nowMs = Date.now();
    let longestMs = 0;
    for (const key of itsKeys) {
      const holders = gutterNodes.filter((node) => node.keyspace.lookup(key) !== undefined);
      assert.deepEqual(holders.map(address), [ring().gutterOf(key)], `${key} on exactly its gutter node`);
      const expiresAtMs = holders[0]!.keyspace.lookup(key)!.expiresAtMs;
      assert.notEqual(expiresAtMs, NO_EXPIRY, `${key} has a TTL on the gutter`);
      assert.ok(expiresAtMs - nowMs <= TTL_S * 1000, `${key}: TTL ${expiresAtMs - nowMs} ms <= ${TTL_S} s`);
      longestMs = Math.max(longestMs, expiresAtMs - nowMs);
      for (const survivor of ringNodes.slice(1)) {
        assert.equal(survivor.keyspace.lookup(key), undefined, `${key} never lands on another ring node`);
      }
    }
    assert.ok(longestMs > 0);
    assert.deepEqual(
      await client.mget([rest[0]!, counter!, msetB!]),
      [`g-${rest[0]}`, "5", "b"],
      "hits on the gutter",
    );
  });

  test("CA-03 the node restarts: a probe readmits it and its keys route to it again, not to the gutter", async () => {
    const victim = address(ringNodes[0]!);
    ringNodes[0] = await startCacheNode({ server: { port: ringNodes[0]!.port } });
    await log.waitFor((event) => event.type === "readmit" && event.address === victim, READMIT_BOUND_MS);
    log.events.length = 0;
    const itsKeys = KEYS.filter((key) => ring().ownerOf(key) === victim);
    const values = await client.mget(itsKeys);
    assert.ok(
      values.every((value) => value === null),
      "the restarted node is empty: misses, not gutter copies",
    );
    assert.equal(log.ofType("gutter").length, 0);
    assert.ok(log.ofType("send").every((event) => event.address === victim));
    await Promise.all(itsKeys.map((key) => client.set(key, key, { exS: 300 })));
    assert.equal(ringNodes[0]!.keyspace.size, itsKeys.length);
  });
});

describe("CA-22 the routing proxy fails over the same way", () => {
  let ringNodes: TestNode[];
  let gutterNode: TestNode;
  let router: RingRouter;
  let proxy: RoutingProxy;
  const log = new EventLog();
  before(async () => {
    ringNodes = await Promise.all([startCacheNode(), startCacheNode()]);
    gutterNode = await startCacheNode();
    router = new RingRouter({
      nodes: ringNodes.map(address),
      connectTimeoutMs: 2_000,
      commandTimeoutMs: 2_000,
      ejection: { failureLimit: 2, retryAfterMs: 60_000 },
      gutter: { nodes: [address(gutterNode)], ttlS: 10 },
      onEvent: log.push,
      ...proxyWireOptions,
    });
    proxy = new RoutingProxy({ router, port: 0 });
    await proxy.listen();
  });
  after(async () => {
    await proxy?.close();
    await router?.close();
    await Promise.all([...(ringNodes ?? []), gutterNode].map((node) => node?.close()));
  });

  test("CA-22 a stock client through the proxy: a dead node's keys answer nil from the gutter, writes there get EX <= 10, MGET spans ring and gutter", async () => {
    const app = new NodeConnection({ host: "127.0.0.1", port: proxy.port, tagStatus: true });
    try {
      const keys = Array.from({ length: 40 }, (_, i) => `px:${i}`);
      const victim = address(ringNodes[0]!);
      const dead = keys.filter((key) => router.ownerOf(key) === victim);
      const alive = keys.filter((key) => router.ownerOf(key) !== victim);
      assert.ok(dead.length > 0 && alive.length > 0, "keys on both nodes");
      await Promise.all(keys.map((key) => app.send(["SET", key, key, "EX", "300"])));
      await ringNodes[0]!.close();
      for (let round = 1; round <= MAX_ROUNDS && !router.isEjected(victim); round++) {
        const replies = await Promise.all(keys.map((key) => app.send(["GET", key])));
        assert.deepEqual(
          replies,
          keys.map((key) => (dead.includes(key) ? null : key)),
        );
      }
      assert.equal(router.isEjected(victim), true);
      const stored = await app.send(["SET", dead[0]!, "fresh", "EX", "300"]);
      assert.ok(stored instanceof StatusReply && stored.text === "OK");
      const ttlS = await app.send(["TTL", dead[0]!]);
      assert.ok(typeof ttlS === "number" && ttlS > 0 && ttlS <= 10, `TTL on the gutter: ${ttlS}`);
      assert.equal(gutterNode.keyspace.lookup(dead[0]!)?.value, "fresh");
      assert.deepEqual(await app.send(["MGET", dead[0]!, alive[0]!]), ["fresh", alive[0]]);
      const refused = await app.send(["PERSIST", dead[0]!]);
      assert.ok(refused instanceof ErrorReply && /CACHE_CLIENT_GUTTER_REFUSED/.test(refused.message));
    } finally {
      await app.close();
    }
  });
});
