/**
 * The console as `casebook up` runs it, for the end-to-end tests: the four working systems
 * (rate-limiter, webhooks, cache, payments) and metrics each as its own process through its real entry,
 * on free loopback ports with their embedded engines in a temp data dir, then the console
 * (in this process) told where they run, scraping fast, with a fixture junit report. A light
 * load keeps their metrics moving: checks on the rate limiter, PINGs on the cache's RESP port.
 *
 * @example
 * const fx = await startConsoleFixture();
 * await fetch(`${fx.console.url}/api/systems`);
 * await fx.close();
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@casebook/lab/free-port";
import { type ServerProcess, startServerProcess } from "@casebook/lab/server-process";
import { main, type RunningConsole } from "../src/main.ts";

/** webhooks' and payments' embedded PGlite start in seconds idle, but took 51 s at load 35 here. */
const systemReadyTimeoutMs = 120_000;

export const workingSystems = ["rate-limiter", "webhooks", "cache", "payments", "metrics"] as const;
const root = new URL("../../../", import.meta.url);

/** The junit report the claims table reads: one pass, one fail for rate-limiter; the rest not run. */
export const fixtureReport = `<?xml version="1.0" encoding="utf-8"?>
<testsuites>
	<testcase name="RL-01 five immediate calls are allowed" time="0.1" classname="test" file="${new URL("systems/rate-limiter/test/token-bucket.test.ts", root).pathname}"/>
	<testcase name="RL-02 refill is lazy" time="0.1" classname="test" file="${new URL("systems/rate-limiter/test/token-bucket.test.ts", root).pathname}" failure="boom">
		<failure type="testCodeFailure" message="boom">stack</failure>
	</testcase>
</testsuites>
`;

export interface ConsoleFixture {
  readonly console: RunningConsole;
  readonly systems: ReadonlyMap<string, ServerProcess>;
  readonly respPort: number;
  close(): Promise<void>;
}

export async function startConsoleFixture(): Promise<ConsoleFixture> {
  const dataDir = mkdtempSync(join(tmpdir(), "casebook-console-"));
  const respPort = await freePort();
  const env = (name: string): NodeJS.ProcessEnv => ({
    CASEBOOK_DATA: join(dataDir, name),
    DATABASE_URL: "",
    REDIS_URL: "",
    LOG_LEVEL: "warn",
    ...(name === "cache" ? { CACHE_PORT: String(respPort) } : {}),
    // Its scenario's alert fires at the evaluator's first round after the refusal: 1 s, not 15 s.
    ...(name === "metrics" ? { METRICS_ALERT_INTERVAL_MS: "1000" } : {}),
  });
  const started = await Promise.allSettled(
    workingSystems.map((name) =>
      startServerProcess({
        name,
        entry: new URL(`systems/${name}/src/main.ts`, root),
        env: env(name),
        readyTimeoutMs: systemReadyTimeoutMs,
      }),
    ),
  );
  const systems = new Map<string, ServerProcess>();
  started.forEach((result, i) => {
    if (result.status === "fulfilled") systems.set(workingSystems[i]!, result.value);
  });
  const stopSystems = () => Promise.all([...systems.values()].map((s) => s.stop()));
  const failed = started.find((r) => r.status === "rejected");
  if (failed !== undefined) {
    await stopSystems();
    throw (failed as PromiseRejectedResult).reason;
  }
  const reportPath = join(dataDir, "test-report.xml");
  writeFileSync(reportPath, fixtureReport);
  const running = await main({
    ...process.env,
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    CASEBOOK_CONSOLE_SYSTEMS: JSON.stringify([...systems].map(([name, s]) => ({ name, url: s.url }))),
    CASEBOOK_TEST_REPORT: reportPath,
    CASEBOOK_CONSOLE_SCRAPE_INTERVAL: "250ms",
    CASEBOOK_CONSOLE_WINDOW_SCRAPES: "40",
  });
  const load = startLoad(systems.get("rate-limiter")!.url, respPort);
  return {
    console: running,
    systems,
    respPort,
    close: async () => {
      load.stop();
      await running.close();
      await stopSystems();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Every 200 ms: three rate-limit checks (the 6th of a burst gets limited) and a few cache PINGs. */
function startLoad(rateLimiterUrl: string, respPort: number): { stop(): void } {
  const socket = connect({ host: "127.0.0.1", port: respPort });
  socket.on("error", () => {}); // the cache stopping first at close is not a failure
  socket.on("data", () => {});
  const timer = setInterval(() => {
    for (let i = 0; i < 3; i++) {
      void fetch(`${rateLimiterUrl}/v1/check`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ descriptors: { ip: "203.0.113.9", user: "42", route: "/v1/payments" } }),
        signal: AbortSignal.timeout(2_000),
      })
        .then((r) => r.body?.cancel())
        .catch(() => {});
    }
    if (socket.writable) socket.write("*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
  }, 200);
  return {
    stop: () => {
      clearInterval(timer);
      socket.destroy();
    },
  };
}
