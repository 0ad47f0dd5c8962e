/**
 * The console's failover scenario (CA-04/CA-17's failover shown live): a PRIVATE cluster of our
 * cache nodes started for the run — three primaries as processes on free loopback ports (the
 * launcher `cluster-launcher.ts`, as `--nodes` does), plus a fourth node attached as the first
 * primary's replica — its data in a temporary directory; never this node, never its keys. A
 * cluster client (`CacheClient.cluster`, the library applications use) writes a new key of the
 * first primary's slots every `writeEveryMs`; the primary is SIGKILLed; the replica's election
 * (a majority of the two surviving primaries) promotes it and the client, refused, refreshes its
 * slot map and writes again. The plot counts writes acknowledged and refused as they happen; the
 * sentence says how long writes were refused, when the replica was promoted, and how many
 * acknowledged writes the promoted replica holds (replication is asynchronous: the last few before
 * the kill may be lost, as in Redis). Every node is stopped and the directory removed in a finally.
 *
 * @example
 * new ScenarioRuns([primaryKilledScenario()]);
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario } from "@casebook/infra/http/scenario-runs";
import { keySlot } from "@casebook/kit/cluster-slot";
import { CacheClient } from "../client/cache-client.ts";
import type { AdminClient } from "../cluster/clients/cluster-admin-client.ts";
import { type LocalCluster, launchCluster, waitUntil } from "../cluster/workers/cluster-launcher.ts";
import { evenSlotRanges } from "../domain/slot-ranges.ts";

export interface PrimaryKilledOptions {
  /** Failure detection (the nodes' CACHE_CLUSTER_NODE_TIMEOUT). Default 1 000. */
  nodeTimeoutMs?: number;
  /** One write every … ms. Default 75. */
  writeEveryMs?: number;
  /** Writes before the kill, in ms. Default 3 000. */
  beforeMs?: number;
  /** Writes after they resume, in ms. Default 3 000. */
  afterMs?: number;
  /** Longest wait for writes to resume after the kill. Default 25 000. */
  maxOutageMs?: number;
}

const PRIMARIES = 3;
/** One write's bound: a write to a killed node fails fast (refused) or hangs until this. */
const WRITE_TIMEOUT_MS = 1_000;
/** How often the replica's ROLE is read after the kill. */
const PROMOTION_POLL_MS = 50;
/** Bound on the four nodes' start and on the replica's first sync, on a loaded machine. */
const START_TIMEOUT_MS = 30_000;

/** A hash tag whose slot the first primary owns, so every write goes to the node killed. */
function tagOfFirstPrimary(): string {
  const [first, last] = evenSlotRanges(PRIMARIES)[0]!;
  for (let i = 0; ; i++) {
    const slot = keySlot(`{p${i}}`);
    if (slot >= first && slot <= last) return `{p${i}}`;
  }
}

async function roleOf(admin: AdminClient): Promise<string> {
  const role = await admin.call("ROLE");
  return Array.isArray(role) ? String(role[0]) : "";
}

/** The three primaries, then a fourth node made the first primary's replica, in sync. */
async function startPrivateCluster(dataDir: string, nodeTimeoutMs: number, signal: AbortSignal) {
  const cluster = await launchCluster({
    nodes: PRIMARIES,
    replicas: 0,
    dataDir,
    host: "127.0.0.1",
    basePort: 0,
    nodeTimeoutMs,
    logLevel: "info",
    startTimeoutMs: START_TIMEOUT_MS,
    // Never the sidecar's own limits, password or interfaces: a private cluster of plain nodes on loopback.
    env: { CACHE_MAXMEMORY: "64mb", CACHE_REQUIREPASS: "", CACHE_MASTERAUTH: "", HOST: "127.0.0.1" },
  });
  try {
    signal.throwIfAborted();
    const replica = await cluster.addNode();
    const admin = await cluster.admin(replica.index);
    try {
      await admin.call("CLUSTER", "REPLICATE", cluster.nodes[0]!.id);
      await waitUntil("the replica to sync with the first primary", START_TIMEOUT_MS, async () => {
        signal.throwIfAborted();
        const role = await admin.call("ROLE");
        return Array.isArray(role) && role[0] === "slave" && role[3] === "connected";
      });
    } finally {
      admin.close();
    }
    return { cluster, replicaIndex: replica.index };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

export function primaryKilledScenario(options: PrimaryKilledOptions = {}): Scenario {
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 1_000;
  const writeEveryMs = options.writeEveryMs ?? 75;
  const beforeMs = options.beforeMs ?? 3_000;
  const afterMs = options.afterMs ?? 3_000;
  const maxOutageMs = options.maxOutageMs ?? 25_000;
  return {
    id: "primary-killed",
    title: "A primary killed: failover, writes refused then resumed",
    line: `A private cluster of our nodes (3 primaries, a replica of the first) and a client writing every ${writeEveryMs} ms; the primary is SIGKILLed: writes are refused until the replica is promoted, then resume.`,
    xLabel: "s from the start of the writes",
    yLabel: "writes",
    run: async (ctx) => {
      const { signal } = ctx;
      const dataDir = mkdtempSync(join(tmpdir(), "casebook-cache-scenario-"));
      let cluster: LocalCluster | undefined;
      let client: CacheClient | undefined;
      let replicaAdmin: AdminClient | undefined;
      try {
        const started = await startPrivateCluster(dataDir, nodeTimeoutMs, signal);
        cluster = started.cluster;
        ctx.progress(0.3); // four node processes up, the replica in sync
        const seed = cluster.nodes[1]!;
        // Few hops and short retries: each write says at once whether the cluster took it.
        client = await CacheClient.cluster({
          seeds: [`${seed.host}:${seed.port}`],
          maxRedirects: 2,
          retryBaseMs: 20,
          retryCapMs: 100,
          minRefreshIntervalMs: 100,
        });
        replicaAdmin = await cluster.admin(started.replicaIndex);
        const tag = tagOfFirstPrimary();
        const acknowledged: string[] = [];
        let refused = 0;
        let lastError = "";
        const t0Ms = Date.now();
        const at = () => (Date.now() - t0Ms) / 1_000;
        let firstRefusedMs: number | undefined;
        let lastRefusedMs: number | undefined;
        let killedMs: number | undefined;
        let resumedMs: number | undefined;
        let promotedMs: number | undefined;
        const writeOnce = async (i: number) => {
          const key = `${tag}:w:${i}`;
          const startedMs = Date.now();
          const ok = await Promise.race([
            client!.set(key, String(i)).then(
              () => true,
              (error: Error) => {
                lastError = error.message;
                return false;
              },
            ),
            sleep(WRITE_TIMEOUT_MS, false, { signal }),
          ]);
          if (ok) {
            acknowledged.push(key);
            if (killedMs !== undefined && resumedMs === undefined && lastRefusedMs !== undefined)
              resumedMs = startedMs;
          } else {
            refused += 1;
            firstRefusedMs ??= startedMs;
            lastRefusedMs = startedMs;
          }
          const x = at();
          ctx.point("writes acknowledged so far", x, acknowledged.length);
          ctx.point("writes refused so far", x, refused);
        };
        let i = 0;
        const writeFor = async (ms: number, until?: () => boolean) => {
          const endMs = Date.now() + ms;
          while (Date.now() < endMs && !(until?.() ?? false)) {
            const next = Date.now() + writeEveryMs;
            await writeOnce(i++);
            await sleep(Math.max(0, next - Date.now()), undefined, { signal });
          }
        };
        await writeFor(beforeMs);
        ctx.progress(0.4);
        const beforeKill = acknowledged.length;
        await cluster.kill(0);
        killedMs = Date.now();
        // The two moments as marks on the acknowledged line.
        ctx.point("primary killed (SIGKILL)", at(), acknowledged.length);
        // The replica's role, read every PROMOTION_POLL_MS beside the writes: when it became primary.
        const killedAtMs = killedMs;
        const watching = (async () => {
          while (promotedMs === undefined && Date.now() - killedAtMs < maxOutageMs && !signal.aborted) {
            if ((await roleOf(replicaAdmin!).catch(() => "")) === "master") {
              promotedMs = Date.now();
              ctx.point("replica promoted", at(), acknowledged.length);
            } else await sleep(PROMOTION_POLL_MS);
          }
        })();
        await writeFor(maxOutageMs, () => resumedMs !== undefined);
        await watching;
        ctx.progress(0.8);
        const resumed = resumedMs !== undefined;
        if (resumed) await writeFor(afterMs);
        ctx.progress(0.95);
        // What the promoted replica holds of every acknowledged write (asynchronous replication).
        const values = resumed ? await client.mget(acknowledged) : [];
        const held = values.filter((v) => v !== null).length;
        ctx.progress(1);
        const s = (ms: number) => (ms / 1_000).toFixed(1);
        if (!resumed) {
          return (
            `${beforeKill} writes acknowledged, then the primary was SIGKILLed: writes still refused ` +
            `${s(maxOutageMs)} s later (${refused} refused; last error: ${lastError}); ` +
            `the replica ${promotedMs === undefined ? "was not promoted" : `was promoted after ${s(promotedMs - killedMs)} s`}.`
          );
        }
        const refusedFor =
          firstRefusedMs === undefined
            ? "no write was refused"
            : `writes refused for ${s(lastRefusedMs! - firstRefusedMs + writeEveryMs)} s (${refused} writes)`;
        return (
          `${beforeKill} writes acknowledged, then the primary was SIGKILLed: ${refusedFor}; ` +
          `the replica ${promotedMs === undefined ? "was promoted (seen through the writes)" : `was promoted ${s(promotedMs - killedMs)} s after the kill`}` +
          ` (node timeout ${s(nodeTimeoutMs)} s); writes resumed ${s(resumedMs! - killedMs)} s after the kill; ` +
          `${held} of ${acknowledged.length} acknowledged writes on the new primary` +
          `${held === acknowledged.length ? "" : ` (${acknowledged.length - held} lost to asynchronous replication)`}.`
        );
      } finally {
        replicaAdmin?.close();
        await client?.close().catch(() => undefined);
        await cluster?.stop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
