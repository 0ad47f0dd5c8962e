/**
 * A private redis-sentinel monitoring a private redis-server (from spawn-redis.ts): the
 * sentinel's config (which it rewrites as it learns) in a temp dir of its own, a free
 * loopback port, quorum 1, short down-after and failover timeouts so a test sees a verdict
 * in about a second. Readiness: the sentinel answers `SENTINEL get-master-addr-by-name`
 * with the master's port, on a socket this process holds. Never the machine's Redis.
 *
 * @example
 * const sentinel = await spawnRedisSentinel();
 * const client = new Redis({ sentinels: [{ host: "127.0.0.1", port: sentinel.port }], name: sentinel.masterName });
 * sentinel.redis.pause();    // the master goes quiet; the sentinel marks it +sdown after downAfterMs
 * await sentinel.stop();     // stops the sentinel, then the master
 */
import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { type ServerEngineOptions, type SpawnedServer, spawnServerEngine } from "./server-engine.ts";
import { type SpawnedRedis, type SpawnRedisOptions, spawnRedis } from "./spawn-redis.ts";

export interface SpawnRedisSentinelOptions extends ServerEngineOptions {
  /** The monitored master's name. Default "casebook". */
  masterName?: string;
  /** `down-after-milliseconds`. Default 1 000. */
  downAfterMs?: number;
  /** `failover-timeout`. Default 5 000. */
  failoverTimeoutMs?: number;
  /** Options of the monitored redis-server. */
  redis?: SpawnRedisOptions;
  /** Extra sentinel.conf lines. */
  config?: string;
  probeTimeoutMs?: number;
}

export interface SpawnedRedisSentinel extends SpawnedServer {
  /** The monitored master (pause, kill, restart it to make the sentinel react). */
  readonly redis: SpawnedRedis;
  readonly masterName: string;
}

/**
 * Sends one command on a fresh connection and resolves what arrived once `done` accepts it
 * (or when the connection closes or `timeoutMs` passes): redisProbe reads one line only.
 */
function redisReply(
  port: number,
  args: string[],
  timeoutMs: number,
  done: (reply: string) => boolean,
): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    let reply = "";
    const finish = () => {
      socket.destroy();
      resolve(reply);
    };
    socket.setTimeout(timeoutMs, finish);
    socket.once("error", finish);
    socket.once("close", finish);
    socket.once("connect", () =>
      socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`),
    );
    socket.on("data", (chunk: Buffer) => {
      reply += chunk.toString("latin1");
      if (done(reply)) finish();
    });
  });
}

/** Starts a redis-server and a sentinel monitoring it (see the module's example). */
export async function spawnRedisSentinel(
  options: SpawnRedisSentinelOptions = {},
): Promise<SpawnedRedisSentinel> {
  const masterName = options.masterName ?? "casebook";
  const probeTimeoutMs = options.probeTimeoutMs ?? 1_000;
  const redis = await spawnRedis(options.redis);
  let sentinel: SpawnedServer;
  try {
    sentinel = await spawnServerEngine(
      {
        name: "redis-sentinel",
        program: "redis-sentinel",
        debianPackage: "redis-sentinel",
        dirPrefix: "casebook-sentinel-",
        args: (port, dir) => {
          const conf = join(dir, "sentinel.conf");
          writeFileSync(
            conf,
            [
              `port ${port}`,
              "bind 127.0.0.1",
              `dir ${dir}`,
              "daemonize no",
              'logfile ""',
              `sentinel monitor ${masterName} 127.0.0.1 ${redis.port} 1`,
              `sentinel down-after-milliseconds ${masterName} ${options.downAfterMs ?? 1_000}`,
              `sentinel failover-timeout ${masterName} ${options.failoverTimeoutMs ?? 5_000}`,
              options.config ?? "",
              "",
            ].join("\n"),
          );
          return [conf];
        },
        answers: async (port) => {
          const expected = `\r\n${redis.port}\r\n`;
          const args = ["SENTINEL", "get-master-addr-by-name", masterName];
          return (await redisReply(port, args, probeTimeoutMs, (r) => r.includes(expected))).includes(
            expected,
          );
        },
        url: (port) => `redis://127.0.0.1:${port}`,
      },
      options,
    );
  } catch (error) {
    await redis.stop();
    throw error;
  }
  const stop = async () => {
    try {
      await sentinel.stop();
    } finally {
      await redis.stop();
    }
  };
  return {
    url: sentinel.url,
    port: sentinel.port,
    dir: sentinel.dir,
    redis,
    masterName,
    get pid() {
      return sentinel.pid;
    },
    get state() {
      return sentinel.state;
    },
    pause: () => sentinel.pause(),
    resume: () => sentinel.resume(),
    kill: () => sentinel.kill(),
    restart: () => sentinel.restart(),
    stop,
    log: () => sentinel.log(),
    [Symbol.asyncDispose]: stop,
  };
}
