/**
 * A password-protected cluster: every node started with CACHE_REQUIREPASS, the launcher
 * AUTHs its admin calls, replicas present CACHE_MASTERAUTH with PSYNC (the launcher gives
 * them the cluster's password) and a primary refuses a replica with a wrong one. Clients:
 * ioredis' Cluster with a password, and Redis's own `redis-cli -a … --cluster create`,
 * `--cluster check` and `redis-cli --user … --pass … -c`.
 */
import assert from "node:assert/strict";
import { type ChildProcess, execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { guardProcessTree } from "@casebook/lab/child-reaper";
import { findExecutable } from "@casebook/lab/executables";
import { type LaunchOptions, spawnNode } from "../src/cluster/workers/cluster-launcher.ts";
import { clusterErrors } from "../src/errors.ts";
import {
  NO_FAILOVER_NODE_TIMEOUT_MS,
  startTestCluster,
  type TestCluster,
  waitUntil,
} from "./cluster-harness.ts";

const PASSWORD = "cluster-s3cret";
const TOOL_TIMEOUT_MS = 60_000;

function run(command: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: TOOL_TIMEOUT_MS }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

const redisCli = findExecutable("redis-cli");

describe("a cluster with requirepass and masterauth", { timeout: 180_000 }, () => {
  let cluster: TestCluster;
  before(async () => {
    // Launching waits until every replica streams: it only gets there if PSYNC's credentials pass.
    // Nothing here fails a node over: a node stalled 1 s on a loaded host must not be voted down.
    cluster = await startTestCluster({
      nodes: 4,
      replicas: 1,
      nodeTimeoutMs: NO_FAILOVER_NODE_TIMEOUT_MS,
      env: { CACHE_REQUIREPASS: PASSWORD },
    });
  });
  after(() => cluster?.stop());

  test("ioredis' Cluster with the password reads and writes; without it every command gets NOAUTH", async () => {
    const client = cluster.ioredis({ redisOptions: { password: PASSWORD, commandTimeout: 5_000 } });
    for (let i = 0; i < 20; i++) await client.set(`k:${i}`, String(i));
    assert.equal(await client.get("k:7"), "7");
    const first = cluster.cluster.nodes[0]!;
    const anonymous = await import("ioredis").then(
      ({ Redis }) =>
        new Redis({
          host: first.host,
          port: first.port,
          lazyConnect: true,
          enableReadyCheck: false,
          protocol: 2,
        }),
    );
    try {
      await anonymous.connect();
      await assert.rejects(
        anonymous.call("CLUSTER", "INFO"),
        /^ReplyError: NOAUTH Authentication required\.$/,
      );
    } finally {
      anonymous.disconnect();
    }
  });

  test("redis-cli -a PASS --cluster check passes; without -a it cannot even read the nodes", {
    skip: redisCli ? false : "redis-cli is not installed (Debian package redis-tools)",
  }, async () => {
    const first = cluster.cluster.nodes[0]!;
    const address = `${first.host}:${first.port}`;
    const ok = await run(redisCli!, ["-a", PASSWORD, "--no-auth-warning", "--cluster", "check", address]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /\[OK\] All 16384 slots covered\./);
    const refused = await run(redisCli!, ["--cluster", "check", address]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stdout + refused.stderr, /NOAUTH/);
  });

  test("redis-cli --user default --pass PASS -c follows MOVED with its credentials", {
    skip: redisCli ? false : "redis-cli is not installed (Debian package redis-tools)",
  }, async () => {
    const first = cluster.cluster.nodes[0]!;
    const base = [
      "-h",
      first.host,
      "-p",
      String(first.port),
      "--user",
      "default",
      "--pass",
      PASSWORD,
      "--no-auth-warning",
      "-c",
    ];
    for (const key of ["a", "b", "c", "d"]) {
      const set = await run(redisCli!, [...base, "SET", `cli:${key}`, key]);
      assert.equal(set.stdout.trim(), "OK", set.stderr);
      const get = await run(redisCli!, [...base, "GET", `cli:${key}`]);
      assert.equal(get.stdout.trim(), key);
    }
  });
});

describe("a replica with the wrong masterauth", { timeout: 120_000 }, () => {
  test("is refused by its primary: the launch never sees it stream", async () => {
    await assert.rejects(
      startTestCluster({
        nodes: 2,
        replicas: 1,
        startTimeoutMs: 8_000,
        env: { CACHE_REQUIREPASS: PASSWORD },
        nodeEnv: (index): Record<string, string> => (index === 1 ? { CACHE_MASTERAUTH: "wrong" } : {}),
      }),
      (error) =>
        clusterErrors.is(error, "CACHE_CLUSTER_LAUNCH_FAILED") || /replica|stream/i.test(String(error)),
    );
  });
});

describe("redis-cli --cluster create -a on bare password-protected nodes", { timeout: 180_000 }, () => {
  test("creates the cluster, and --cluster check -a sees every slot covered", {
    skip: redisCli ? false : "redis-cli is not installed (Debian package redis-tools)",
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "cache-cli-create-"));
    const children: ChildProcess[] = [];
    try {
      const bare: LaunchOptions = {
        nodes: 3,
        replicas: 0,
        dataDir: dir,
        nodeTimeoutMs: 2_000,
        env: { CACHE_REQUIREPASS: PASSWORD },
        detached: true,
        onSpawn: (child) => {
          const guard = guardProcessTree(child.pid!);
          child.once("exit", () => guard.release());
          children.push(child);
        },
      };
      // Each node binds port 0 and says where it listens: no port chosen here can be taken meanwhile.
      const nodes = await Promise.all(
        [0, 1, 2].map((index) => spawnNode(bare, index, { port: 0, busPort: 0 }, [])),
      );
      const ports = nodes.map(({ listening }) => listening.announcedPort);
      const auth = ["-a", PASSWORD, "--no-auth-warning"];
      await waitUntil("every node to answer PING", 60_000, async () => {
        for (const port of ports) {
          if ((await run(redisCli!, ["-p", String(port), ...auth, "PING"])).stdout.trim() !== "PONG")
            return false;
        }
        return true;
      });
      const addresses = ports.map((port) => `127.0.0.1:${port}`);
      const created = await run(redisCli!, [...auth, "--cluster", "create", ...addresses, "--cluster-yes"]);
      assert.equal(created.code, 0, created.stdout + created.stderr);
      assert.match(created.stdout, /\[OK\] All 16384 slots covered\./);
      await waitUntil("the cluster to be ok", 30_000, async () => {
        const checked = await run(redisCli!, [...auth, "--cluster", "check", addresses[0]!]);
        return checked.code === 0 && /All 16384 slots covered/.test(checked.stdout);
      });
    } finally {
      for (const child of children) child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
