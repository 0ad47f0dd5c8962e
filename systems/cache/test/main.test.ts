/**
 * The composition root: configuration from the environment (a bad value fails the start
 * naming it), the RESP port and the HTTP sidecar (/healthz, /readyz, /metrics with the
 * cache's numbers), and a graceful close of both. No unauthenticated node beyond loopback:
 * a non-loopback CACHE_HOST without CACHE_REQUIREPASS refuses to start.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigError } from "@casebook/kit/config";
import { Redis } from "ioredis";
import { bindRefusal, isLoopbackHost } from "../src/domain/bind-guard.ts";
import { cacheErrors } from "../src/errors.ts";
import { main } from "../src/main.ts";

const quietEnv = { CACHE_PORT: "0", PORT: "0", LOG_LEVEL: "silent" };

describe("main", () => {
  test("serves RESP and the sidecar; /metrics reports hits, misses, evictions and memory", async () => {
    const node = await main({ ...quietEnv, CACHE_MAXMEMORY: "1mb", CACHE_MAXMEMORY_POLICY: "allkeys-lfu" });
    const redis = new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await redis.connect();
      assert.deepEqual(await redis.config("GET", "maxmemory-policy"), ["maxmemory-policy", "allkeys-lfu"]);
      assert.deepEqual(await redis.config("GET", "maxmemory"), ["maxmemory", String(1024 * 1024)]);
      await redis.set("k", "v");
      await redis.get("k");
      await redis.get("missing");
      assert.equal((await fetch(`${node.url}/healthz`)).status, 200);
      assert.equal((await fetch(`${node.url}/readyz`)).status, 200);
      const metrics = await (await fetch(`${node.url}/metrics`)).text();
      for (const line of [
        "cache_keyspace_hits_total 1",
        "cache_keyspace_misses_total 1",
        "cache_evicted_keys_total 0",
        "cache_keys 1",
        "cache_connected_clients 1",
        `cache_maxmemory_bytes ${1024 * 1024}`,
      ]) {
        assert.ok(metrics.includes(`\n${line}\n`), line);
      }
      assert.match(metrics, /\ncache_used_memory_bytes \d+\n/);
    } finally {
      redis.disconnect();
      await node.close();
    }
    assert.equal(node.server.connectionCount, 0, "closing the service closed the RESP server");
  });

  test("CA-13 a maxmemory the node cannot hold fails the start, saying how to fix it", async () => {
    await assert.rejects(main({ ...quietEnv, CACHE_MAXMEMORY: "100gb" }), (error) => {
      assert.ok(cacheErrors.is(error, "CACHE_CONFIG_INVALID"));
      assert.match(
        error.message,
        /CACHE_MAXMEMORY=100gb is above the 64\.00G this node's value arena addresses: .*--nodes/,
      );
      return true;
    });
  });

  test("a bad setting fails the start with one message naming it", async () => {
    await assert.rejects(
      main({ ...quietEnv, CACHE_MAXMEMORY: "lots", CACHE_MAXMEMORY_POLICY: "lru" }),
      (error) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /CACHE_MAXMEMORY="lots"/);
        assert.match(error.message, /CACHE_MAXMEMORY_POLICY="lru": expected one of noeviction, allkeys-lru/);
        return true;
      },
    );
  });

  test("loopback is 127.0.0.0/8, ::1 and localhost; every other address needs a password", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "localhost"]) {
      assert.equal(isLoopbackHost(host), true, host);
      assert.equal(bindRefusal(host, ""), undefined, host);
    }
    for (const host of ["0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "203.0.113.9", "cache.internal"]) {
      assert.equal(isLoopbackHost(host), false, host);
      assert.match(bindRefusal(host, "") ?? "", /set CACHE_REQUIREPASS=<password>/, host);
      assert.equal(bindRefusal(host, "pw"), undefined, host);
    }
  });

  test("CACHE_HOST=0.0.0.0 without CACHE_REQUIREPASS refuses to start, naming the setting", async () => {
    await assert.rejects(main({ ...quietEnv, CACHE_HOST: "0.0.0.0" }), (error) => {
      assert.ok(cacheErrors.is(error, "CACHE_CONFIG_INVALID"));
      assert.match(
        error.message,
        /^CACHE_HOST=0\.0\.0\.0 is reachable from other machines .* CACHE_REQUIREPASS=/,
      );
      assert.doesNotMatch(error.message, /\n/);
      return true;
    });
  });

  test("with CACHE_REQUIREPASS it listens on 0.0.0.0 and every command needs AUTH", async () => {
    const node = await main({ ...quietEnv, CACHE_HOST: "0.0.0.0", CACHE_REQUIREPASS: "pw" });
    const anonymous = new Redis({ port: node.port, lazyConnect: true, enableReadyCheck: false, protocol: 2 });
    const authed = new Redis({ port: node.port, lazyConnect: true, password: "pw", maxRetriesPerRequest: 0 });
    try {
      await anonymous.connect();
      await assert.rejects(anonymous.get("k"), /NOAUTH Authentication required\./);
      await authed.connect();
      assert.equal(await authed.set("k", "v"), "OK");
      assert.equal(await authed.call("ACL", "WHOAMI"), "default");
    } finally {
      anonymous.disconnect();
      authed.disconnect();
      await node.close();
    }
  });
});
