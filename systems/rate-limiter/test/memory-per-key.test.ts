/**
 * RL-18: "50 million keys × a few tens of bytes each = a few GB; the bottleneck is
 * operations per second, not data volume." Measured on real Redis with MEMORY USAGE
 * (the key's whole footprint: Redis's own per-key overhead, the hash, its fields).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { Redis } from "ioredis";
import { algorithms, storedBytes } from "../src/domain/algorithm.ts";
import { openRedisLimiterStore } from "../src/store/limiter-store.ts";
import { deleteKeys } from "./store-backends.ts";

const SAMPLE_KEYS = 200;
const PROJECTED_KEYS = 50_000_000;

test("RL-18 a token bucket holds a few tens of bytes of data; 50 million keys fit in a few GB", async (t) => {
  const url = await requireRedis(t);
  if (!url) return;
  const prefix = `${uniqueName("rl-mem")}:`;
  const store = await openRedisLimiterStore({ url, keyPrefix: prefix });
  const admin = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const limit = { algorithm: "token-bucket", capacity: 100, ratePerS: 10 } as const;
    const keys = Array.from({ length: SAMPLE_KEYS }, (_, i) => `user:${1_000_000 + i}`);
    await Promise.all(
      keys.map((key) =>
        store.spend([
          { algorithm: "token-bucket", keys: [key], limits: [limit], costs: [1], requestId: key },
        ]),
      ),
    );
    const usages = await Promise.all(keys.map((key) => admin.memory("USAGE", prefix + key)));
    const perKeyBytes = usages.reduce<number>((sum, bytes) => sum + Number(bytes), 0) / SAMPLE_KEYS;

    const fields = await admin.hgetall(prefix + keys[0]!);
    const dataBytes = storedBytes({ kind: "hash", fields }) + (prefix + keys[0]!).length;
    const state = algorithms["token-bucket"].fromStored({ kind: "hash", fields });
    assert.ok(state, "the key holds a token bucket");
    assert.ok(dataBytes >= 10 && dataBytes < 100, `data per key: ${dataBytes} bytes, "a few tens"`);

    const projectedGb = (perKeyBytes * PROJECTED_KEYS) / 1e9;
    t.diagnostic(
      `MEMORY USAGE ${perKeyBytes.toFixed(1)} B/key (data ${dataBytes} B); 50M keys ≈ ${projectedGb.toFixed(1)} GB`,
    );
    assert.ok(projectedGb >= 1 && projectedGb < 10, `50M keys ≈ ${projectedGb.toFixed(2)} GB: "a few GB"`);
  } finally {
    admin.disconnect();
    await store.close();
    await deleteKeys(url, prefix);
  }
});
