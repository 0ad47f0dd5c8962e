/**
 * What main() returns and takes, apart from main.ts so that the launchers main.ts loads
 * (src/edge/run-gateways.ts) name them without importing main.ts: that would be an
 * import cycle.
 *
 * @example
 * const running: RunningSystem = await main({ PORT: "0" });
 */
import type { Service } from "@casebook/infra/http/service";
import type { Clock } from "@casebook/kit/clock";
import type { SystemConfig } from "./config.ts";
import type { OfflinePort } from "./domain/send-path.ts";
import type { Gateway } from "./gateway/gateway.ts";
import type { SystemMetrics } from "./metrics.ts";

export interface RunningSystem {
  readonly url: string;
  readonly service: Service;
  readonly config: SystemConfig;
  readonly metrics: SystemMetrics;
  readonly issuerToken: string;
  readonly gateway: Gateway | undefined;
  close(): Promise<void>;
}

export interface MainOptions {
  clock?: Clock;
  /** The push path (CH-18); default none until the push simulator is configured. */
  offline?: OfflinePort;
}

/** main.ts's `main`, passed to what main.ts itself loads (a launcher, a scenario) to avoid an import cycle. */
export type StartMain = (env: NodeJS.ProcessEnv, options?: MainOptions) => Promise<RunningSystem>;
