/**
 * The service on the real PostgreSQL through lab's TCP fault proxy, for the store-outage tests:
 * a test schema migrated, the proxy in front of the server, a temporary data directory, and
 * main() pointed at the proxy — all stopped and removed when the test ends. Undefined when
 * PostgreSQL is not running (the test skipped).
 *
 * @example
 * const world = await startOnStoreProxy(t, "us_outage", { URL_SHORTENER_CACHE_MAX_ENTRIES: "0" });
 * world.proxy.cutAll(); // the database goes away under the running service
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { type FaultProxy, startFaultProxy } from "@casebook/lab/fault-proxy";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres } from "@casebook/lab/test-engines";
import { main, type RunningSystem } from "../src/main.ts";
import { migrateShortenerStore } from "../src/store/migrate.ts";
import { ADMIN_TOKEN } from "./api-fixture.ts";

export interface StoreProxyWorld {
  readonly running: RunningSystem;
  readonly proxy: FaultProxy;
  /** The service's data directory (the edge's access log may go there). */
  readonly dir: string;
}

export async function startOnStoreProxy(
  t: TestContext,
  prefix: string,
  env: Record<string, string>,
): Promise<StoreProxyWorld | undefined> {
  const url = await requirePostgres(t);
  if (!url) return undefined;
  const schema = await openPostgresTestSchema(url, {
    system: "url-shortener",
    prefix,
    prepare: (db) => migrateShortenerStore(db).then(() => undefined),
  });
  const proxy = await startFaultProxy({ upstream: url });
  const dir = await mkdtemp(join(tmpdir(), `casebook-${prefix}-`));
  let running: RunningSystem | undefined;
  t.after(async () => {
    await running?.close();
    await proxy.close();
    await schema.drop();
    await rm(dir, { recursive: true, force: true });
  });
  running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dir,
    DATABASE_URL: proxy.rewrite(url),
    URL_SHORTENER_DB_SCHEMA: schema.schema,
    URL_SHORTENER_DB_MAX_CONNECTIONS: "4",
    URL_SHORTENER_ADMIN_TOKEN: ADMIN_TOKEN,
    ...env,
  });
  return { running, proxy, dir };
}
