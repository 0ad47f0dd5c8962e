/**
 * Failure detection and failover by majority (CA-15) on a 3-primary / 3-replica
 * cluster of node processes (node timeout 1 s):
 * - a crashed primary (SIGKILL) is marked FAIL by a quorum of primaries, its replica wins
 *   the election with a higher epoch, and ioredis writes resume on it;
 * - with two of three primaries frozen, the one left sees them PFAIL but cannot reach
 *   FAIL alone: no replica is promoted, no epoch moves.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { keySlot } from "@casebook/kit/cluster-slot";
import { type AdminClient, ReplyError } from "../src/cluster/clients/cluster-admin-client.ts";
import { startTestCluster, type TestCluster, waitUntil } from "./cluster-harness.ts";

const NODE_TIMEOUT_MS = 1_000;

async function field(admin: AdminClient, name: string): Promise<string> {
  const info = (await admin.call("CLUSTER", "INFO")) as string;
  return new RegExp(`^${name}:(.*)$`, "m").exec(info)![1]!.trim();
}

describe("failover by majority", { timeout: 120_000 }, () => {
  let harness: TestCluster;

  before(async () => {
    harness = await startTestCluster({ nodes: 6, replicas: 1, nodeTimeoutMs: NODE_TIMEOUT_MS });
  });

  after(async () => {
    await harness?.stop();
  });

  test("CA-15 two of three primaries frozen: the survivor sees them PFAIL, never FAIL, and nobody is promoted", async () => {
    const [a, b, c] = [0, 1, 2].map((index) => harness.cluster.nodes[index]!);
    const survivor = await harness.admin(a!.index);
    const epochBefore = await field(survivor, "cluster_current_epoch");
    harness.cluster.signal(b!.index, "SIGSTOP");
    harness.cluster.signal(c!.index, "SIGSTOP");
    try {
      await waitUntil("the survivor to flag both PFAIL", 10_000, async () => {
        const nodes = (await survivor.call("CLUSTER", "NODES")) as string;
        return [b!, c!].every((node) =>
          nodes.split("\n").some((line) => line.startsWith(node.id) && line.includes("fail?")),
        );
      });
      // Three node timeouts with a quorum of 2 out of reach: a FAIL would have happened by now if one observer could decide it.
      await sleep(NODE_TIMEOUT_MS * 3);
      const nodes = (await survivor.call("CLUSTER", "NODES")) as string;
      assert.doesNotMatch(nodes, /[ ,]fail[ ,]/, "no node reached FAIL");
      assert.equal(await field(survivor, "cluster_state"), "fail", "a minority node stops serving (CA-16)");
      const refused = (await survivor.raw("SET", "minority-write", "x")) as { message?: string };
      assert.equal(refused.message, "CLUSTERDOWN The cluster is down");
    } finally {
      harness.cluster.signal(b!.index, "SIGCONT");
      harness.cluster.signal(c!.index, "SIGCONT");
    }
    await waitUntil(
      "the cluster to serve again",
      10_000,
      async () => (await field(survivor, "cluster_state")) === "ok",
    );
    for (const replica of harness.cluster.nodes.filter((node) => node.role === "replica")) {
      const role = (await (await harness.admin(replica.index)).call("ROLE")) as string[];
      assert.equal(role[0], "slave", `replica ${replica.index} was not promoted`);
    }
    assert.equal(await field(survivor, "cluster_current_epoch"), epochBefore, "no election happened");
  });

  test("CA-15 a SIGKILLed primary: a quorum marks it FAIL, its replica is elected with a higher epoch, writes resume", async () => {
    const redis = harness.ioredis();
    const key = "seats:42";
    await redis.set(key, "v6");
    const owner = await harness.ownerOf(keySlot(key));
    const replica = harness.cluster.nodes.find((node) => node.primaryIndex === owner.index)!;
    const replicaAdmin = await harness.admin(replica.index);
    await waitUntil("v6 to reach the replica", 5_000, async () => {
      await replicaAdmin.call("READONLY");
      return (await replicaAdmin.call("GET", key)) === "v6";
    });
    const voter = harness.cluster.nodes.find(
      (node) => node.role === "primary" && node.index !== owner.index,
    )!;
    const voterAdmin = await harness.admin(voter.index);
    const epochBefore = Number(await field(voterAdmin, "cluster_current_epoch"));
    const killedAt = performance.now();
    await harness.cluster.kill(owner.index);
    await waitUntil("the replica to be promoted", 15_000, async () => {
      const role = (await replicaAdmin.call("ROLE")) as string[];
      return role[0] === "master";
    });
    const promotedAfterMs = Math.round(performance.now() - killedAt);
    const nodes = (await voterAdmin.call("CLUSTER", "NODES")) as string;
    const oldLine = nodes.split("\n").find((line) => line.startsWith(owner.id))!;
    assert.match(oldLine, /[ ,]fail[ ,]/, "the voters hold the old primary as FAIL");
    const newEpoch = Number(await field(replicaAdmin, "cluster_my_epoch"));
    assert.ok(
      newEpoch > epochBefore,
      `the winner's config epoch ${newEpoch} is newer than any before (${epochBefore})`,
    );
    const startMs = performance.now();
    let attempts = 0;
    for (; attempts < 200; attempts++) {
      const ok = await redis.set(key, "v8").then(
        () => true,
        () => false,
      );
      if (ok) break;
      await sleep(50);
    }
    assert.equal(await replicaAdmin.call("GET", key), "v8", "the write landed on the promoted replica");
    await harness.converged(keySlot(key), replica.index);
    assert.equal(await redis.get(key), "v8");
    assert.ok(
      promotedAfterMs > NODE_TIMEOUT_MS,
      `no promotion before the node timeout (${promotedAfterMs} ms)`,
    );
    process.stdout.write(
      `# CA-15 failover: promoted ${promotedAfterMs} ms after SIGKILL (node timeout ${NODE_TIMEOUT_MS} ms), ` +
        `writes resumed after ${Math.round(performance.now() - startMs)} ms more, epoch ${epochBefore} → ${newEpoch}\n`,
    );
  });

  // A restarted old primary holds its old slots and epoch in its saved config. It takes no write:
  // it serves only under a majority lease (two-way contact since it started — a contact of "never"
  // is not one at the process's monotonic 0), and a peer that knows the newer owner sends its
  // UPDATE before the PONG that completes the contact. Then it follows the winner and resyncs.
  test("CA-16 the killed primary restarts with its old slots and epoch: it takes no write, and rejoins as a replica of the winner", async () => {
    const key = "seats:42";
    const slot = keySlot(key);
    const winner = await harness.ownerOf(slot);
    // The node the previous test killed: the only one whose process is gone.
    const old = harness.cluster.nodes.find(
      (node) => node.child.exitCode !== null || node.child.signalCode !== null,
    )!;
    const restarted = await harness.cluster.restart(old.index);
    const admin = await harness.admin(restarted.index);
    const replies: string[] = [];
    await waitUntil("the restarted node to follow the winner", 15_000, async () => {
      const reply = await admin.raw("SET", key, "stale-write");
      replies.push(reply instanceof ReplyError ? reply.message.split(" ")[0]! : String(reply));
      const role = (await admin.call("ROLE")) as unknown[];
      return role[0] === "slave" && role[3] === "connected";
    });
    process.stdout.write(`# CA-16 rejoin: ${replies.length} writes tried: ${replies.join(", ")}\n`);
    assert.ok(
      replies.every((reply) => ["CLUSTERDOWN", "MOVED", "TRYAGAIN"].includes(reply)),
      `the stale primary refused every write while rejoining (${[...new Set(replies)].join(", ")})`,
    );
    await admin.call("READONLY");
    // A restarted node serves nothing until it has two-way contact with a majority again.
    let value: unknown;
    await waitUntil("the rejoined replica to serve reads", 10_000, async () => {
      const reply = await admin.raw("GET", key);
      value = reply;
      return !(reply instanceof ReplyError);
    });
    assert.equal(value, "v8", "it resynced from the winner: a stale write did not survive");
    const nodes = (await admin.call("CLUSTER", "NODES")) as string;
    const mine = nodes.split("\n").find((line) => line.includes("myself"))!;
    assert.match(mine, new RegExp(`myself,slave ${winner.id} `));
  });
});
