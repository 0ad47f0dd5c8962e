/**
 * The Redis layer on a real Redis Cluster (3 primaries, spawned here): the client
 * options, scripts loaded on every node, calls routed by slot, a batch spread over
 * nodes, a cross-slot call refused with one code whoever catches it, and a dead node
 * failing fast instead of being retried.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { keySlot } from "@casebook/kit/cluster-slot";
import { freePort } from "@casebook/lab/free-port";
import { type SpawnedRedisCluster, spawnRedisCluster } from "@casebook/lab/spawn-redis-cluster";
import { closedEnginePass, engineFree, enginesRequired, uniqueName } from "@casebook/lab/test-engines";
import { type Cluster, Redis } from "ioredis";
import {
  closeRedis,
  connectRedisCluster,
  isClusterClient,
  redisClientOptions,
  redisClusterOptions,
} from "../../src/redis/connect-redis.ts";
import { redisErrors } from "../../src/redis/redis-errors.ts";
import { parseScript } from "../../src/redis/script-contract.ts";
import { ScriptRegistry } from "../../src/redis/script-registry.ts";
import { cappedCounterScriptsDir } from "./fixtures/capped-counter-store.ts";

/** A plain connection to one node, to look at what landed there. */
function nodeClient(port: number): Redis {
  const client = new Redis({ host: "127.0.0.1", port, commandTimeout: 1_000, retryStrategy: () => null });
  client.on("error", () => {});
  return client;
}

/** A hash tag whose slot `cluster` served from `primary` at creation. */
function tagOnPrimary(cluster: SpawnedRedisCluster, primary: number, prefix: string): string {
  for (let i = 0; i < 10_000; i++) {
    const tag = `${prefix}${i}`;
    if (cluster.primaryForSlot(keySlot(tag)) === cluster.primaries[primary]) return tag;
  }
  throw new Error(`no tag for primary ${primary} within 10 000 tries`);
}

test("cluster options keep the per-node bounds and turn every unsafe resend off", (t) => {
  if (engineFree(t)) return;
  const options = redisClusterOptions({ keyPrefix: "p:", commandTimeoutMs: 40, random: () => 0 });
  const node = redisClientOptions({ commandTimeoutMs: 40 });
  assert.equal(options.keyPrefix, "p:");
  assert.equal(options.redisOptions?.keyPrefix, undefined, "the prefix is applied once, by the cluster");
  assert.equal(options.redisOptions?.commandTimeout, 40);
  assert.equal(options.redisOptions?.maxRetriesPerRequest, node.maxRetriesPerRequest);
  assert.equal(options.redisOptions?.autoResendUnfulfilledCommands, false);
  assert.equal(options.enableOfflineQueue, false);
  assert.equal(options.retryDelayOnFailover, 0, "a command in flight on a closed connection is not re-sent");
  assert.equal(options.retryDelayOnClusterDown, 0);
  assert.equal(options.scaleReads, "master");
  assert.equal(options.maxRedirections, 5);
  assert.equal(options.clusterRetryStrategy!(1), 25);
  assert.equal(options.clusterRetryStrategy!(301), null);
});

test("connectRedisCluster validates seeds and fails fast when none answers", async () => {
  await assert.rejects(connectRedisCluster({ nodes: [] }), (e) => redisErrors.is(e, "REDIS_URL_INVALID"));
  await assert.rejects(connectRedisCluster({ nodes: ["http://127.0.0.1:6379"] }), (e) =>
    redisErrors.is(e, "REDIS_URL_INVALID"),
  );
  const port = await freePort(); // nothing listens there
  const started = performance.now();
  await assert.rejects(
    connectRedisCluster({ nodes: [`redis://:pw@127.0.0.1:${port}`], connectTimeoutMs: 300 }),
    (error) => {
      assert.ok(redisErrors.is(error, "REDIS_UNAVAILABLE"));
      assert.ok(!error.message.includes(":pw@"), "password redacted");
      return true;
    },
  );
  assert.ok(performance.now() - started < 2_000);
});

describe("ScriptRegistry on a Redis Cluster", { timeout: 60_000 }, () => {
  let cluster: SpawnedRedisCluster | undefined;
  let client: Cluster;
  let skipReason = "";
  const prefix = `${uniqueName("infra-cluster")}:`;

  before(async () => {
    if (closedEnginePass) return; // every test below is engine-free: it skips there
    try {
      cluster = await spawnRedisCluster({ primaries: 3 });
    } catch (error) {
      if (enginesRequired) throw error;
      skipReason = `a Redis Cluster could not be started: ${(error as Error).message}`;
      return;
    }
    client = await connectRedisCluster({
      nodes: [cluster.primaries[0]!.url],
      keyPrefix: prefix,
      commandTimeoutMs: 2_000,
    });
  });
  after(async () => {
    if (client) await closeRedis(client);
    await cluster?.stop();
  });

  test("connects through one seed, discovers every primary, and loads scripts on each", async (t) => {
    if (engineFree(t)) return;
    if (!cluster) return t.skip(skipReason);
    assert.ok(isClusterClient(client));
    assert.equal(client.status, "ready");
    assert.equal(client.nodes("master").length, 3);
    const registry = await ScriptRegistry.fromDir(cappedCounterScriptsDir);
    await registry.loadAll(client);
    const sha1 = registry.get("incr-capped").sha1;
    for (const primary of cluster.primaries) {
      const node = nodeClient(primary.port);
      try {
        assert.deepEqual(await node.script("EXISTS", sha1), [1], `loaded on ${primary.port}`);
      } finally {
        node.disconnect();
      }
    }
  });

  test("a batch spread over three nodes runs each call on its slot's node, results in call order", async (t) => {
    if (engineFree(t)) return;
    if (!cluster) return t.skip(skipReason);
    const registry = await ScriptRegistry.fromDir(cappedCounterScriptsDir, { clusterSlots: true });
    const tags = [0, 1, 2].map((i) => tagOnPrimary(cluster!, i, "batch"));
    // A flushed node answers NOSCRIPT: that call alone falls back to EVAL.
    const flushed = nodeClient(cluster.primaries[1]!.port);
    await flushed.script("FLUSH");
    flushed.disconnect();
    const calls = [...tags, tags[0]!].map((tag) => ({
      name: "incr-capped",
      keys: [`{${tag}}:hits`],
      args: [5, 60_000],
    }));
    const results = await registry.runBatch(client, calls);
    assert.deepEqual(
      results.map((r) => (r.status === "fulfilled" ? (r.value as number[]).slice(0, 2) : r.reason)),
      [
        [1, 1],
        [1, 1],
        [1, 1],
        [1, 2],
      ],
    );
    for (const [i, tag] of tags.entries()) {
      const node = nodeClient(cluster.primaries[i]!.port);
      try {
        assert.equal(await node.hget(`${prefix}{${tag}}:hits`, "count"), i === 0 ? "2" : "1");
        const evals = /cmdstat_eval:calls=(\d+)/.exec(await node.info("commandstats"))?.[1] ?? "0";
        assert.equal(evals, i === 1 ? "1" : "0", "only the flushed node needed the EVAL fallback");
      } finally {
        node.disconnect();
      }
    }
  });

  test("a cross-slot call is REDIS_SCRIPT_CROSS_SLOT, refused locally or by the cluster itself", async (t) => {
    if (engineFree(t)) return;
    if (!cluster) return t.skip(skipReason);
    const pair = parseScript("pair-2.lua", "-- KEYS[1] first\n-- KEYS[2] second\n-- returns 1\nreturn 1");
    const keys = ["{a}:x", "{b}:x"];
    assert.notEqual(keySlot(`${prefix}${keys[0]}`), keySlot(`${prefix}${keys[1]}`));
    // Unchecked: the call reaches a node, which refuses it (CROSSSLOT) without running it.
    await assert.rejects(new ScriptRegistry([pair]).run(client, "pair", keys, []), (error) => {
      assert.ok(redisErrors.is(error, "REDIS_SCRIPT_CROSS_SLOT"));
      assert.match(String(error.fields.reply), /^CROSSSLOT/);
      return true;
    });
    // Checked: refused here, before anything is sent.
    await assert.rejects(
      new ScriptRegistry([pair], { clusterSlots: true }).run(client, "pair", keys, []),
      (e) => redisErrors.is(e, "REDIS_SCRIPT_CROSS_SLOT"),
    );
    assert.equal(await new ScriptRegistry([pair]).run(client, "pair", ["{a}:x", "{a}:y"], []), 1);
  });

  test("a killed primary fails its slot's calls at once with REDIS_UNAVAILABLE, not after a wait", async (t) => {
    if (engineFree(t)) return;
    if (!cluster) return t.skip(skipReason);
    const registry = await ScriptRegistry.fromDir(cappedCounterScriptsDir);
    const tag = tagOnPrimary(cluster, 2, "dead");
    await cluster.primaries[2]!.engine.kill();
    const started = performance.now();
    await assert.rejects(registry.run(client, "incr-capped", [`{${tag}}:hits`], [5, 60_000]), (error) =>
      redisErrors.is(error, "REDIS_UNAVAILABLE"),
    );
    assert.ok(performance.now() - started < 1_500, "no wait for a failover that cannot come");
  });
});
