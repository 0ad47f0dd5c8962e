/**
 * What `main` starts and gives back: the running service with its parts, and the options a
 * test may pass in. Apart from main.ts so that src/edge/run-with-edge.ts (which main.ts loads
 * on --edge) can name them without importing main.ts.
 *
 * @example
 * const running: RunningSystem = await main(env, { clock });
 * await running.close();
 */
import type { Service } from "@casebook/infra/http/service";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import type { ReadPath } from "./api/api-context.ts";
import type { FastPathStats } from "./api/redirect-fast-path.ts";
import type { SystemConfig } from "./config.ts";
import type { ClickBuffer } from "./domain/click-buffer.ts";
import type { TargetVerifier } from "./domain/target-verifier.ts";
import type { VisitSink } from "./domain/visit.ts";
import type { SystemMetrics } from "./metrics.ts";
import type { ClickStore } from "./store/click-store.ts";
import type { ClickFlusher } from "./workers/click-flusher.ts";
import type { ClickRollup } from "./workers/click-rollup.ts";
import type { EdgeLogIngester } from "./workers/edge-log-ingester.ts";

export interface ClickPipeline {
  readonly buffer: ClickBuffer;
  readonly store: ClickStore;
  readonly flusher: ClickFlusher;
  readonly rollup: ClickRollup;
  /** The edge's access log ingester, when URL_SHORTENER_EDGE_ACCESS_LOG is set. */
  readonly edge: EdgeLogIngester | undefined;
}

export interface RunningSystem {
  readonly url: string;
  readonly service: Service;
  readonly db: Database;
  readonly config: SystemConfig;
  readonly metrics: SystemMetrics;
  readonly reader: ReadPath & { readonly stats?: unknown };
  /** The click pipeline, when URL_SHORTENER_CLICKS is on. */
  readonly clicks: ClickPipeline | undefined;
  /** Where the click log is (store/click-database.ts): `db` on PostgreSQL, a PGlite on its own thread otherwise. */
  readonly clicksDb: Database;
  /** The redirect's fast path (api/redirect-fast-path.ts), when the read path has an LRU. */
  readonly fastPath: FastPathStats | undefined;
  /** The demo workspace created by THIS start (undefined when it existed already or is off). */
  readonly bootstrap: { workspaceId: string; apiKey: string } | undefined;
  close(): Promise<void>;
}

export interface MainOptions {
  clock?: Clock;
  /** The click sink (workers/click-recorder.ts); default: main builds it from the config. */
  visits?: VisitSink;
  /** The abuse check before a link is stored; default: the local lists of the config (US-16). */
  verifier?: TargetVerifier;
}

/** main.ts's `main`, as run-with-edge.ts receives it. */
export type StartMain = (env?: NodeJS.ProcessEnv, options?: MainOptions) => Promise<RunningSystem>;
