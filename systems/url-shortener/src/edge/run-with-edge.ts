/**
 * `casebook run url-shortener --edge` (or `node src/main.ts --edge`): the service with its
 * nginx edge in front, as the design runs it — nginx (Debian's, started by lab's spawner:
 * ARCHITECTURE's engines table) with edge/nginx-edge-config.ts on a free loopback port, the
 * service on PORT behind it. The two are wired by settings the launcher fills in: a fresh
 * X-Edge-Token for the run, the edge's click log under `$CASEBOOK_DATA/url-shortener-edge/`
 * (ingested by the service, kept across runs: its cursor row says where the service is),
 * the purge URL, and — unless URL_SHORTENER_DOMAINS is set — the edge as the short domain, so
 * short URLs point at it. Stop order: the edge first (its requests in flight still reach the
 * origin), then the service, whose close reads the click log to the end.
 *
 * @example
 * const running = await mainWithEdge(main, { PORT: "8109" });
 * running.edgeUrl; // "http://127.0.0.1:41234": short links go here
 * await running.close();
 */
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { dataDirFor } from "@casebook/infra/sql/open-database";
import { freePort } from "@casebook/lab/free-port";
import { type SpawnedNginx, spawnNginx } from "@casebook/lab/spawn-nginx";
import { loadSystemConfig } from "../config.ts";
import type { MainOptions, RunningSystem, StartMain } from "../running-system.ts";
import { edgeHttpBlock, edgeMainDirectives, PURGE_PATH } from "./nginx-edge-config.ts";

/** True when the command line asks for the edge (main.ts hands over to this file). */
export function isEdgeLaunch(argv: readonly string[]): boolean {
  return argv.includes("--edge");
}

export interface RunningWithEdge extends RunningSystem {
  /** The edge's URL: where clicks go. */
  readonly edgeUrl: string;
  readonly edge: SpawnedNginx;
}

/**
 * `main` is main.ts's, passed in: main.ts loads this module from its entry (top-level await),
 * so importing main.ts from here would wait on itself.
 */
export async function mainWithEdge(
  main: StartMain,
  env: NodeJS.ProcessEnv = process.env,
  options: MainOptions = {},
): Promise<RunningWithEdge> {
  const config = loadSystemConfig(env); // a bad setting fails here, before nginx starts
  const port = config.port === 0 ? await freePort() : config.port;
  const logDir = dataDirFor("url-shortener-edge", env);
  await mkdir(logDir, { recursive: true });
  const accessLog = join(logDir, "clicks.log");
  const token = randomBytes(24).toString("base64url");
  let domain = "";
  const edge = await spawnNginx({
    main: edgeMainDirectives(),
    http: (edgePort, dir) => {
      domain = env.URL_SHORTENER_DOMAINS === undefined ? `localhost:${edgePort}` : config.domains[0]!.host;
      const domains = env.URL_SHORTENER_DOMAINS === undefined ? [domain] : config.domains.map((d) => d.host);
      return edgeHttpBlock({ port: edgePort, dir, origin: `127.0.0.1:${port}`, domains, token, accessLog });
    },
    // The service is not up yet: any answer (a 502) proves nginx listens.
    readyPath: "/healthz",
  });
  let running: RunningSystem;
  try {
    running = await main(
      {
        ...env,
        PORT: String(port),
        URL_SHORTENER_DOMAINS: env.URL_SHORTENER_DOMAINS ?? `http://${domain}`,
        URL_SHORTENER_EDGE_TOKEN: token,
        URL_SHORTENER_EDGE_ACCESS_LOG: accessLog,
        URL_SHORTENER_EDGE_PURGE_URL: `${edge.url}${PURGE_PATH}`,
      },
      options,
    );
  } catch (error) {
    await edge.stop();
    throw error;
  }
  running.service.log.info(
    { edge: edge.url, origin: running.url, clicksLog: accessLog },
    "edge in front: short links go to the edge; its access log is counted as clicks",
  );
  return {
    ...running,
    edgeUrl: edge.url,
    edge,
    close: async () => {
      await edge.stop();
      await running.close();
    },
  };
}
