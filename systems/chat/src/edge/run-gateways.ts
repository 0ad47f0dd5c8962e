/**
 * `casebook run chat --gateways N` (or `node src/main.ts --gateways N`): chat as it is
 * deployed (CH-04, CH-23, CH-27) on one machine — the send service in this process on PORT
 * (the HTTP API), N gateway processes (src/main.ts with CHAT_ROLE=gateway, each on a free
 * loopback port) and the L4 front (nginx `stream`, l4-front.ts) over them, so clients know
 * one socket address and never a gateway. The pieces are wired by settings filled in here:
 * a JWT key shared for the run (unless CHAT_JWT_SECRET is set), the send service's URL, and
 * — unless REDIS_URL is set — a private redis-server (lab's spawner) for the session table
 * and the routing between gateways, which no in-process store can share across processes.
 * The send service keeps PGlite by default: gateways open no database. Stop order: the
 * gateways drain (4000, reconnect with jitter), then the front, then the send service.
 *
 * @example
 * const running = await mainWithGateways(main, 3, { PORT: "8102" });
 * running.frontUrl; // "ws://127.0.0.1:41234/v1/socket": every client connects here
 * await running.close();
 */
import { randomBytes } from "node:crypto";
import { freePort } from "@casebook/lab/free-port";
import { type ServerProcess, startServerProcess } from "@casebook/lab/server-process";
import { type SpawnedNginx, spawnNginx } from "@casebook/lab/spawn-nginx";
import { spawnRedis } from "@casebook/lab/spawn-redis";
import type { MainOptions, RunningSystem } from "../running-system.ts";
import { l4StreamBlock } from "./l4-front.ts";

export const MAX_GATEWAYS = 16;
const gatewayEntry = new URL("../main.ts", import.meta.url);

/**
 * The launch asked for on the command line: `--gateways N` (1..16) and an optional
 * `--front-port P`; undefined without `--gateways`. A bad value throws naming the flag.
 *
 * @example
 * gatewayLaunchOf(["--gateways", "3"]); // { gateways: 3, frontPort: undefined }
 */
export function gatewayLaunchOf(
  argv: readonly string[],
): { gateways: number; frontPort?: number } | undefined {
  const value = (flag: string) => {
    const i = argv.findIndex((a) => a === flag || a.startsWith(`${flag}=`));
    if (i === -1) return undefined;
    return argv[i]!.includes("=") ? argv[i]!.split("=")[1]! : (argv[i + 1] ?? "");
  };
  const count = value("--gateways");
  if (count === undefined) return undefined;
  const gateways = Number(count);
  if (!/^\d+$/.test(count) || gateways < 1 || gateways > MAX_GATEWAYS) {
    throw new Error(`--gateways ${count}: give a whole number of gateway processes, 1 to ${MAX_GATEWAYS}`);
  }
  const port = value("--front-port");
  if (port === undefined) return { gateways };
  if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65_535) {
    throw new Error(`--front-port ${port}: give a TCP port, 1 to 65535`);
  }
  return { gateways, frontPort: Number(port) };
}

export interface RunningWithGateways extends RunningSystem {
  /** Where every socket connects: the L4 front. */
  readonly frontUrl: string;
  readonly gateways: readonly ServerProcess[];
  /**
   * Stops what runs outside this process: the gateways drain, then the front, then a private
   * Redis. main.ts's entry hooks it on the service's close (run before the send service's
   * own hooks: its Redis client then quits within its 1 s bound).
   */
  stopOutside(): Promise<void>;
}

type StartMain = (env: NodeJS.ProcessEnv, options?: MainOptions) => Promise<RunningSystem>;

/** The gateways drain (SIGTERM → 4000 to their sockets), then the front stops. */
async function stopAll(gateways: readonly ServerProcess[], front?: SpawnedNginx) {
  await Promise.all(gateways.map((g) => g.stop()));
  await front?.stop();
}

/**
 * `main` is main.ts's, passed in: main.ts loads this module from its entry, so importing
 * main.ts's value from here would wait on itself.
 */
export async function mainWithGateways(
  main: StartMain,
  launch: { gateways: number; frontPort?: number },
  env: NodeJS.ProcessEnv = process.env,
): Promise<RunningWithGateways> {
  const redis = env.REDIS_URL ? undefined : await spawnRedis();
  const shared = {
    REDIS_URL: env.REDIS_URL || redis!.url,
    CHAT_JWT_SECRET: env.CHAT_JWT_SECRET ?? randomBytes(32).toString("base64url"),
  };
  let api: RunningSystem;
  try {
    api = await main({ ...env, ...shared, CHAT_ROLE: "api" });
  } catch (error) {
    await redis?.stop();
    throw error;
  }
  const started = await Promise.allSettled(
    Array.from({ length: launch.gateways }, (_, i) =>
      startServerProcess({
        name: `chat-gateway-${i + 1}`,
        entry: gatewayEntry,
        env: {
          // The same settings as the send service (prefix, secrets, limits); a port of its own.
          ...env,
          ...shared,
          LOG_LEVEL: env.LOG_LEVEL ?? "info",
          CHAT_ROLE: "gateway",
          CHAT_API_URL: api.url,
          CHAT_GATEWAY_ID: `gw-${i + 1}`,
        },
      }),
    ),
  );
  const gateways = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  let front: SpawnedNginx | undefined;
  try {
    const failed = started.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
    const listenPort = launch.frontPort ?? (await freePort());
    const upstreams = gateways.map((g) => new URL(g.url).host);
    front = await spawnNginx({
      main: l4StreamBlock({ listenPort, gateways: upstreams }),
      http: (port) => `server { listen 127.0.0.1:${port}; location / { return 200 "chat front\\n"; } }`,
    });
    const frontUrl = `ws://127.0.0.1:${listenPort}/v1/socket`;
    api.service.log.info(
      {
        front: frontUrl,
        page: `http://127.0.0.1:${listenPort}/app#token=…&chat=…`,
        api: api.url,
        gateways: gateways.map((g) => g.url),
        redis: redis ? "private redis-server (spawned for this run)" : "REDIS_URL",
      },
      `${gateways.length} gateways behind the L4 front: sockets connect to the front, the API stays on PORT`,
    );
    const frontOf = front;
    return {
      ...api,
      frontUrl,
      gateways,
      stopOutside: async () => {
        await stopAll(gateways, frontOf);
        await redis?.stop();
      },
      close: async () => {
        await stopAll(gateways, frontOf);
        await api.close();
        await redis?.stop();
      },
    };
  } catch (error) {
    await stopAll(gateways, front);
    await api.close();
    await redis?.stop();
    throw error;
  }
}
