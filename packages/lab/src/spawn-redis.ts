/**
 * A throw-away `redis-server` for tests that must hurt the engine: its own port,
 * its own temp dir, no persistence, and handles to pause, kill and restart it.
 * Never point these at the shared Redis on 6379: that one belongs to everybody.
 *
 * @example
 * const redis = await spawnRedis();
 * const client = new Redis(redis.url, { commandTimeout: 200 });
 * redis.pause();   // commands now time out
 * redis.resume();
 * await redis.kill();     // connections are refused
 * await redis.restart();  // same port, empty again (no persistence)
 * await redis.stop();     // final: process gone, temp dir removed
 */
import { connect } from "node:net";
import { ownTempDir } from "./child-reaper.ts";
import { EngineProcess, type EngineTimeouts, type SpawnedEngine, spawnedEngine } from "./engine-process.ts";
import { ensureExecutable } from "./executables.ts";

export interface SpawnRedisOptions extends EngineTimeouts {
  /**
   * Extra `redis-server` arguments, e.g. `["--maxmemory", "10mb"]`; a function receives
   * the port each start uses (it changes when a port race forces a retry), for arguments
   * derived from it (a cluster node's bus port).
   */
  args?: string[] | ((port: number) => string[]);
  /** Install Debian's redis-server when it is missing (root only). Default true. */
  install?: boolean;
  /** Timeout of one readiness PING and of the SHUTDOWN request. Default 1 000 ms. */
  probeTimeoutMs?: number;
}

/** A private redis-server: `url` is `redis://127.0.0.1:<port>`. */
export type SpawnedRedis = SpawnedEngine;

/** Encodes one command in RESP, the way every client sends it. */
function encodeCommand(args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`;
}

/**
 * Sends one command on a fresh connection and resolves the first reply line
 * ("+PONG", "-LOADING …"), or "" when the connection fails, closes or times out.
 */
export function redisProbe(port: number, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    let reply = "";
    const done = (line: string) => {
      socket.destroy();
      resolve(line);
    };
    socket.setTimeout(timeoutMs, () => done(""));
    socket.once("error", () => done(""));
    socket.once("close", () => done(reply.split("\r\n")[0] ?? ""));
    socket.once("connect", () => socket.write(encodeCommand(args)));
    socket.on("data", (chunk: Buffer) => {
      reply += chunk.toString("latin1");
      const end = reply.indexOf("\r\n");
      if (end >= 0) done(reply.slice(0, end));
    });
  });
}

/**
 * `INFO server` on a fresh connection: the whole bulk reply, or "" when the connection fails,
 * closes early, times out or answers an error (a server still loading).
 */
function redisInfoProbe(port: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    let reply = Buffer.alloc(0);
    const done = (text: string) => {
      socket.destroy();
      resolve(text);
    };
    socket.setTimeout(timeoutMs, () => done(""));
    socket.once("error", () => done(""));
    socket.once("close", () => done(""));
    socket.once("connect", () => socket.write(encodeCommand(["INFO", "server"])));
    socket.on("data", (chunk: Buffer) => {
      reply = Buffer.concat([reply, chunk]);
      const headerEnd = reply.indexOf("\r\n");
      if (headerEnd < 0) return;
      if (reply[0] !== 0x24 /* $ */) return done("");
      const length = Number(reply.subarray(1, headerEnd).toString("latin1"));
      const body = reply.subarray(headerEnd + 2);
      if (body.length >= length) done(`\r\n${body.subarray(0, length).toString("latin1")}`);
    });
  });
}

/** Starts a private redis-server on a free loopback port and waits until it answers PING. */
export async function spawnRedis(options: SpawnRedisOptions = {}): Promise<SpawnedRedis> {
  const command = await ensureExecutable("redis-server", {
    debianPackage: "redis-server",
    install: options.install ?? true,
  });
  const probeTimeoutMs = options.probeTimeoutMs ?? 1_000;
  const { dir, remove: removeDir } = await ownTempDir("casebook-redis-");
  let engine: EngineProcess;
  try {
    engine = await EngineProcess.start(
      {
        name: "redis",
        command,
        cwd: dir,
        tempDir: dir,
        args: (port) => [
          ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir],
          ...["--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", ""],
          ...(typeof options.args === "function" ? options.args(port) : (options.args ?? [])),
        ],
        // INFO's process_id, not a PING: on a lost port race the port answers for another server.
        isReady: async (port, pid) =>
          (await redisInfoProbe(port, probeTimeoutMs)).includes(`\r\nprocess_id:${pid}\r\n`),
        requestStop: async (port) => {
          await redisProbe(port, ["SHUTDOWN", "NOSAVE"], probeTimeoutMs);
        },
      },
      options,
    );
  } catch (error) {
    await removeDir();
    throw error;
  }
  return spawnedEngine(engine, `redis://127.0.0.1:${engine.port}`, removeDir);
}
