/**
 * A throw-away `nats-server` with JetStream for tests that must hurt the stream engine:
 * its own port, its own store directory (file streams survive kill() and restart(), as
 * after a crash), bounded stores, and handles to pause, kill and restart it. Never
 * point these at the shared NATS on 4222: that one belongs to everybody.
 *
 * @example
 * const nats = await spawnNats();
 * const stream = await openJetStream({ url: nats.url, requestTimeoutMs: 300 });
 * nats.pause();          // publishes time out (STREAM_TIMEOUT)
 * nats.resume();
 * await nats.kill();     // connections are refused; the store stays
 * await nats.restart();  // same port, same store: file streams and durable consumers recover
 * await nats.stop();     // final: process gone, store dir removed
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { trackTempDir } from "./child-reaper.ts";
import { EngineProcess, type EngineTimeouts, type SpawnedEngine, spawnedEngine } from "./engine-process.ts";
import { ensureExecutable } from "./executables.ts";

export interface SpawnNatsOptions extends EngineTimeouts {
  /** Install Debian's nats-server when it is missing (root only). Default true. */
  install?: boolean;
  /** Timeout of one readiness probe. Default 1 000 ms. */
  probeTimeoutMs?: number;
  /** JetStream's memory-store bound. Default 64 MiB. */
  maxMemoryStoreBytes?: number;
  /** JetStream's file-store bound. Default 256 MiB. */
  maxFileStoreBytes?: number;
}

/** A private nats-server: `url` is `nats://127.0.0.1:<port>`; `storeDir` holds JetStream's files. */
export interface SpawnedNats extends SpawnedEngine {
  readonly storeDir: string;
}

/** Bound on the bytes a probe reads: INFO and one JetStream reply are well under it. */
const MAX_PROBE_BYTES = 64 * 1024;

/**
 * Speaks just enough of the NATS protocol to ask `$JS.API.INFO` (JetStream's account info)
 * on a fresh connection. Resolves the server's INFO and the API reply, or undefined when the
 * connection fails, closes or times out — so readiness means JetStream answers, not just a port.
 */
export function natsJetStreamProbe(
  port: number,
  timeoutMs: number,
): Promise<{ info: Record<string, unknown>; reply: string } | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    let text = "";
    let info: Record<string, unknown> | undefined;
    const done = (value: { info: Record<string, unknown>; reply: string } | undefined) => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(timeoutMs, () => done(undefined));
    socket.once("error", () => done(undefined));
    socket.once("close", () => done(undefined));
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      if (text.length > MAX_PROBE_BYTES) return done(undefined);
      if (!info) {
        const end = text.indexOf("\r\n");
        if (end < 0) return;
        const line = text.slice(0, end);
        if (!line.startsWith("INFO ")) return done(undefined);
        try {
          info = JSON.parse(line.slice(5)) as Record<string, unknown>;
        } catch {
          return done(undefined); // not a NATS server's INFO: not ready, never a crash in a data handler
        }
        text = text.slice(end + 2);
        socket.write(
          'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}\r\n' +
            "SUB _probe 1\r\nPUB $JS.API.INFO _probe 0\r\n\r\n",
        );
      }
      // MSG _probe 1 <bytes>\r\n<payload>\r\n, or HMSG for a no-responders status.
      const match = /^(?:MSG _probe 1 (\d+)|HMSG _probe 1 \d+ \d+)\r\n/m.exec(text);
      if (!match) return;
      if (!match[1]) return done(undefined);
      const start = (match.index ?? 0) + match[0].length;
      const length = Number(match[1]);
      if (text.length >= start + length) done({ info, reply: text.slice(start, start + length) });
    });
  });
}

function config(name: string, storeDir: string, options: SpawnNatsOptions): string {
  return [
    `server_name: ${name}`,
    "jetstream {",
    `  store_dir: ${JSON.stringify(storeDir)}`,
    `  max_memory_store: ${options.maxMemoryStoreBytes ?? 64 * 1024 * 1024}`,
    `  max_file_store: ${options.maxFileStoreBytes ?? 256 * 1024 * 1024}`,
    "}",
    "",
  ].join("\n");
}

/** Starts a private nats-server -js on a free loopback port and waits until JetStream answers. */
export async function spawnNats(options: SpawnNatsOptions = {}): Promise<SpawnedNats> {
  const command = await ensureExecutable("nats-server", {
    debianPackage: "nats-server",
    install: options.install ?? true,
  });
  const probeTimeoutMs = options.probeTimeoutMs ?? 1_000;
  const dir = await mkdtemp(join(tmpdir(), "casebook-nats-"));
  const untrack = trackTempDir(dir);
  const removeDir = async () => {
    await rm(dir, { recursive: true, force: true });
    untrack();
  };
  const storeDir = join(dir, "jetstream");
  // A name only this server has: on a lost port race the probe reaches another server, which it must not count.
  const name = `casebook-${process.pid}-${randomBytes(4).toString("hex")}`;
  let engine: EngineProcess;
  try {
    const configFile = join(dir, "nats.conf");
    await writeFile(configFile, config(name, storeDir, options));
    engine = await EngineProcess.start(
      {
        name: "nats",
        command,
        cwd: dir,
        tempDir: dir,
        args: (port) => ["-c", configFile, "-a", "127.0.0.1", "-p", String(port)],
        isReady: async (port) => {
          const probe = await natsJetStreamProbe(port, probeTimeoutMs);
          const answered = probe?.reply.includes('"type":"io.nats.jetstream.api.v1.account_info_response"');
          return probe?.info.server_name === name && answered === true && !probe.reply.includes('"error"');
        },
        // SIGTERM is nats-server's graceful stop: it closes clients and flushes the store.
        requestStop: async (_port, child) => {
          child.kill("SIGTERM");
        },
      },
      options,
    );
  } catch (error) {
    await removeDir();
    throw error;
  }
  const spawned = spawnedEngine(engine, `nats://127.0.0.1:${engine.port}`, removeDir);
  return Object.assign(spawned, { storeDir });
}
