/**
 * Test helper: moves one hash slot between primaries of a lab Redis Cluster by the steps
 * `redis-cli --cluster reshard` takes, split so a test can stop halfway (the slot
 * MIGRATING on the source and IMPORTING on the target, where -ASK and -TRYAGAIN live):
 * `beginMigration` (IMPORTING, then MIGRATING), `moveKeys` (GETKEYSINSLOT + MIGRATE),
 * `finishMigration` (SETSLOT NODE on target, source, then every other primary).
 * Admin connections are ioredis, not the client under test.
 *
 * @example
 * await beginMigration(slot, source, target);
 * await moveKeys(slot, source, target);
 * await finishMigration(cluster, slot, target);
 */
import type { RedisClusterNode, SpawnedRedisCluster } from "@casebook/lab/spawn-redis-cluster";
import { Redis } from "ioredis";

/** Bound on MIGRATE batches per slot in a test. */
const MAX_MIGRATE_BATCHES = 100;
const KEYS_PER_BATCH = 100;

async function onNode<T>(node: RedisClusterNode, body: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({
    host: "127.0.0.1",
    port: node.port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    commandTimeout: 5_000,
  });
  client.on("error", () => {});
  try {
    return await body(client);
  } finally {
    client.disconnect();
  }
}

/** Marks `slot` IMPORTING on the target and MIGRATING on the source (target first, as redis-cli does). */
export async function beginMigration(
  slot: number,
  source: RedisClusterNode,
  target: RedisClusterNode,
): Promise<void> {
  await onNode(target, (c) => c.call("CLUSTER", "SETSLOT", String(slot), "IMPORTING", source.id));
  await onNode(source, (c) => c.call("CLUSTER", "SETSLOT", String(slot), "MIGRATING", target.id));
}

/** MIGRATEs every key of `slot` still on the source to the target; returns how many moved. */
export async function moveKeys(
  slot: number,
  source: RedisClusterNode,
  target: RedisClusterNode,
): Promise<number> {
  return onNode(source, async (client) => {
    let moved = 0;
    for (let batch = 0; batch < MAX_MIGRATE_BATCHES; batch++) {
      const keys = (await client.call(
        "CLUSTER",
        "GETKEYSINSLOT",
        String(slot),
        String(KEYS_PER_BATCH),
      )) as string[];
      if (keys.length === 0) return moved;
      await client.call("MIGRATE", "127.0.0.1", String(target.port), "", "0", "5000", "KEYS", ...keys);
      moved += keys.length;
    }
    throw new Error(`slot ${slot} still had keys after ${MAX_MIGRATE_BATCHES} batches`);
  });
}

/** Assigns `slot` to the target everywhere: target first (it bumps its epoch), then the rest. */
export async function finishMigration(
  cluster: SpawnedRedisCluster,
  slot: number,
  target: RedisClusterNode,
): Promise<void> {
  await onNode(target, (c) => c.call("CLUSTER", "SETSLOT", String(slot), "NODE", target.id));
  for (const node of cluster.primaries.filter((primary) => primary !== target)) {
    await onNode(node, (c) => c.call("CLUSTER", "SETSLOT", String(slot), "NODE", target.id));
  }
}

/** The whole move: begin, move the keys, finish. */
export async function moveSlot(
  cluster: SpawnedRedisCluster,
  slot: number,
  source: RedisClusterNode,
  target: RedisClusterNode,
): Promise<void> {
  await beginMigration(slot, source, target);
  await moveKeys(slot, source, target);
  await finishMigration(cluster, slot, target);
}

/** One raw command on one node (to show what a cluster-unaware client would get). */
export function callNode(node: RedisClusterNode, ...args: string[]): Promise<unknown> {
  return onNode(node, (client) => client.call(args[0]!, ...args.slice(1)));
}
