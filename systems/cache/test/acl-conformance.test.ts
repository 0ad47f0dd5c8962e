/**
 * AUTH, requirepass and ACL users, differentially: the same calls, on the same numbered
 * connections, against this node and a real `redis-server`, and every reply — value or
 * error text (NOAUTH, WRONGPASS, NOPERM) — must be identical. Connections are opened in
 * RESP2 so a NOAUTH node does not fail ioredis's own HELLO; HELLO … AUTH is a step.
 *
 * HELLO's reply is compared by its protocol only (version and ids differ). And Redis regenerates a user's command rules from its permission bitmap, in
 * its command dict's hash order (`-@all +set +get` for `+get +set`); this node keeps the rules
 * in the order given. So the rules after `±@all` are compared as a set, on steps whose rules
 * are simple enough for both to spell them the same way.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { findExecutable } from "@casebook/lab/executables";
import { type SpawnedRedis, spawnRedis } from "@casebook/lab/spawn-redis";
import { Redis } from "ioredis";
import { startCacheNode, type TestNode } from "./cache-node.ts";

type Step = readonly [connection: number, ...args: string[]];
type Outcome = { value: unknown } | { error: string };

async function outcome(client: Redis, args: readonly string[]): Promise<Outcome> {
  try {
    return { value: await client.call(args[0]!, args.slice(1)) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** The rules after `+@all`/`-@all` in an ACL LIST line or GETUSER's `commands`, sorted. */
function sortRules(line: string): string {
  const tokens = line.split(" ");
  const base = tokens.findIndex((t) => t === "+@all" || t === "-@all");
  if (base < 0) return line;
  return [...tokens.slice(0, base + 1), ...tokens.slice(base + 1).sort()].join(" ");
}

function normalize(args: readonly string[], result: Outcome): Outcome {
  if (!("value" in result)) return result;
  // HELLO's map carries the server's version and the connection id: its protocol is what counts here.
  if (String(args[0]).toUpperCase() === "HELLO") {
    const map = result.value as unknown[];
    return { value: map[map.indexOf("proto") + 1] };
  }
  if (String(args[0]).toUpperCase() !== "ACL") return result;
  const sub = String(args[1]).toUpperCase();
  if (sub === "LIST") return { value: (result.value as string[]).map(sortRules) };
  if (sub === "GETUSER" && Array.isArray(result.value)) {
    return {
      value: result.value.map((v, i, all) => (all[i - 1] === "commands" ? sortRules(v as string) : v)),
    };
  }
  return result;
}

const steps: readonly Step[] = [
  [0, "ACL", "WHOAMI"],
  [0, "ACL", "LIST"],
  [0, "ACL", "USERS"],
  [0, "ACL", "SETUSER", "bob", "on", ">p1", "~k*", "+get", "+set"],
  [0, "ACL", "LIST"],
  [0, "ACL", "GETUSER", "bob"],
  [0, "ACL", "GETUSER", "nobody"],
  [0, "ACL", "USERS"],
  [1, "AUTH", "bob", "wrong"],
  [1, "AUTH", "justapassword"],
  [1, "AUTH", "a", "b", "c"],
  [1, "AUTH", "bob", "p1"],
  [1, "ACL", "WHOAMI"],
  [1, "SET", "k1", "v"],
  [1, "GET", "k1"],
  [1, "SET", "other", "v"],
  [1, "GET", "other"],
  [1, "DEL", "k1"],
  [0, "ACL", "SETUSER", "bob", "+@keyspace"],
  [1, "DEL", "k1"],
  [0, "ACL", "SETUSER", "bob", "-@all", "+@read"],
  [1, "GET", "k1"],
  [1, "SET", "k1", "v"],
  [1, "CONFIG", "GET", "maxmemory"],
  [0, "ACL", "SETUSER", "bob", "+config|get"],
  [1, "CONFIG", "GET", "maxmemory"],
  [1, "CONFIG", "SET", "maxmemory", "0"],
  [0, "ACL", "SETUSER", "bob", "allkeys", "allcommands"],
  [0, "ACL", "LIST"],
  [1, "SET", "anything", "v"],
  [0, "ACL", "SETUSER", "bob", "off"],
  [2, "AUTH", "bob", "p1"],
  [0, "ACL", "SETUSER", "bob", "on", "resetpass", "nopass"],
  [2, "AUTH", "bob", "whatever"],
  [2, "ACL", "WHOAMI"],
  [0, "ACL", "SETUSER", "bob", "badrule"],
  [0, "ACL", "SETUSER", "bob", "+nosuch"],
  [0, "ACL", "SETUSER", "bob", "+@nosuch"],
  [0, "ACL", "SETUSER", "bob", "#abc"],
  [0, "ACL", "SETUSER", "carl"],
  [0, "ACL", "LIST"],
  [0, "ACL", "DELUSER", "carl", "nobody", "default"],
  [0, "ACL", "USERS"],
  [0, "CONFIG", "SET", "requirepass", "s3cret"],
  [0, "ACL", "LIST"],
  [0, "PING"],
  [3, "PING"],
  [3, "GET", "k1"],
  [3, "HELLO", "2"],
  [3, "HELLO", "2", "AUTH", "default", "wrong"],
  [3, "AUTH", "wrong"],
  [3, "AUTH", "s3cret"],
  [3, "PING"],
  [3, "ACL", "WHOAMI"],
  [4, "HELLO", "2", "AUTH", "bob", "anything", "SETNAME", "x"],
  [4, "ACL", "WHOAMI"],
  [4, "CLIENT", "GETNAME"],
  [4, "RESET"],
  [4, "PING"],
  [0, "CONFIG", "SET", "requirepass", ""],
  [0, "ACL", "LIST"],
  [5, "PING"],
  [0, "ACL", "DELUSER", "bob"],
];

const CONNECTIONS = 6;

const skip = findExecutable("redis-server")
  ? false
  : "redis-server is not installed (Debian package redis-server): no peer to compare with";

describe("auth and ACL: this node vs redis-server, reply for reply", { skip }, () => {
  let peer: SpawnedRedis;
  let node: TestNode;
  before(async () => {
    peer = await spawnRedis({ install: false });
    node = await startCacheNode();
  });
  after(async () => {
    await node?.close();
    await peer?.stop();
  });

  test("AUTH, HELLO AUTH, requirepass, ACL SETUSER/GETUSER/LIST/USERS/WHOAMI/DELUSER, NOPERM", async () => {
    const options = {
      protocol: 2,
      lazyConnect: true,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 5_000,
    } as const;
    const ours: Redis[] = [];
    const theirs: Redis[] = [];
    try {
      for (let i = 0; i < CONNECTIONS; i++) {
        ours.push(new Redis({ ...options, port: node.port }));
        theirs.push(new Redis(peer.url, options));
      }
      // Connections are opened as the steps first use them (a connection's auth state starts then).
      const opened = new Set<number>();
      for (const [index, ...args] of steps) {
        if (!opened.has(index)) {
          opened.add(index);
          await Promise.all([ours[index]!.connect(), theirs[index]!.connect()]);
        }
        const [mine, peers] = await Promise.all([outcome(ours[index]!, args), outcome(theirs[index]!, args)]);
        assert.deepEqual(
          normalize(args, mine),
          normalize(args, peers),
          `connection ${index}: ${args.join(" ")}`,
        );
      }
    } finally {
      for (const client of [...ours, ...theirs]) client.disconnect();
    }
  });
});
