/**
 * Test helper: a cache node in this process on a free loopback port, with its own
 * keyspace (seeded random, real clock unless given), so a test can talk RESP to it
 * and look at its keyspace directly.
 *
 * @example
 * const node = await startCacheNode({ maxmemoryBytes: 1_000_000, policy: "allkeys-lru" });
 * const client = new Redis({ port: node.port, lazyConnect: true });
 * await node.close();
 */
import { connect } from "node:net";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import type { CacheServer, CacheServerOptions } from "../src/api/cache-server.ts";
import { startRespApi } from "../src/api/register-api.ts";
import type { RespLimits } from "../src/api/resp-parser.ts";
import type { EvictionPolicyName } from "../src/domain/eviction-policy.ts";
import { Keyspace } from "../src/domain/keyspace.ts";
import { startServerCron } from "../src/workers/server-cron.ts";

export interface TestNodeOptions {
  maxmemoryBytes?: number;
  policy?: EvictionPolicyName;
  clock?: Clock;
  limits?: RespLimits;
  maxClients?: number;
  server?: Partial<CacheServerOptions>;
  /** Run the server cron (active expiry) as main.ts does. */
  cron?: boolean;
  /** A keyspace to serve instead of a fresh one (e.g. an instrumented subclass). */
  keyspace?: Keyspace;
}

export interface TestNode {
  readonly port: number;
  readonly server: CacheServer;
  readonly keyspace: Keyspace;
  close(): Promise<void>;
}

export async function startCacheNode(options: TestNodeOptions = {}): Promise<TestNode> {
  const clock = options.clock ?? systemClock;
  const keyspace =
    options.keyspace ??
    new Keyspace({
      clock,
      random: seededRandom("cache-node"),
      maxmemoryBytes: options.maxmemoryBytes ?? 0,
      policy: options.policy ?? "noeviction",
    });
  const { server, port } = await startRespApi({
    keyspace,
    clock,
    port: 0,
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.maxClients ? { maxClients: options.maxClients } : {}),
    ...options.server,
  });
  const cron = options.cron ? startServerCron({ keyspace }) : undefined;
  return {
    port,
    server,
    keyspace,
    close: async () => {
      await cron?.stop();
      await server.close();
    },
  };
}

/** Sends raw bytes on a fresh connection; resolves everything received until the server closes or `quietMs` passes. */
export function rawExchange(port: number, bytes: string | Buffer, options: { timeoutMs?: number } = {}) {
  return new Promise<{ reply: string; closedByServer: boolean }>((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ reply: Buffer.concat(chunks).toString("latin1"), closedByServer: false });
    }, options.timeoutMs ?? 2_000);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("end", () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ reply: Buffer.concat(chunks).toString("latin1"), closedByServer: true });
    });
    socket.on("connect", () => socket.write(bytes));
  });
}

/** Reads from a fresh connection until `expected` replies' worth of text (`untilText`) arrived. */
export function rawRequest(
  port: number,
  bytes: string | Buffer,
  untilText: (reply: string) => boolean,
  timeoutMs = 5_000,
) {
  return new Promise<string>((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let reply = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(`no complete reply within ${timeoutMs} ms; got ${JSON.stringify(reply.slice(0, 300))}`),
      );
    }, timeoutMs);
    socket.on("data", (chunk: Buffer) => {
      reply += chunk.toString("latin1");
      if (untilText(reply)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(reply);
      }
    });
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on("connect", () => socket.write(bytes));
  });
}
