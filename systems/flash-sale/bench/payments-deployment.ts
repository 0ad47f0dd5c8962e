/**
 * The payments system as flash-sale meets it in production, for the tests and the bench: its
 * acquirer simulator as its own process, and the payments service as its own process through
 * its real entry (`systems/payments/src/main.ts`) on this machine's PostgreSQL, in a schema of
 * its own, with a merchant and its key made through payments' admin API. Flash-sale never
 * imports payments' code: it talks HTTP to both, and reads the simulator's own counters
 * (`/admin/stats`) and arrivals per second (`/admin/arrivals`). The payments process runs on a
 * fixed port, so a test can SIGKILL it and start it again where the charge worker expects it.
 *
 * @example
 * const payments = await startPaymentsDeployment({ pgUrl, acquirerLatencyMs: 5 });
 * const charger = new PaymentsCharger({ url: payments.url, apiKey: payments.apiKey, cardToken: "tok_visa", timeoutMs: 10_000 });
 * await payments.kill(); await payments.restart();
 * (await payments.arrivals()).every((s) => (s.operations["POST /v1/authorizations"] ?? 0) <= 50);
 * await payments.close();
 */
import type { ChildProcess } from "node:child_process";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { ownTempDir } from "@casebook/lab/child-reaper";
import { EngineProcess } from "@casebook/lab/engine-process";
import { freePort } from "@casebook/lab/free-port";
import { httpProbe } from "@casebook/lab/http-probe";
import { type ServerProcess, startServerProcess } from "@casebook/lab/server-process";
import { uniqueName } from "@casebook/lab/test-engines";

const paymentsEntry = new URL("../../payments/src/main.ts", import.meta.url);
const acquirerEntry = new URL("../../payments/src/sim/acquirer-main.ts", import.meta.url);
const ADMIN_TOKEN = "flash-sale-payments-admin-0123456789";
/** Payments' start on a loaded machine: Node's TypeScript stripping, migrations, listen. */
const READY_TIMEOUT_MS = 90_000;
const ADMIN_TIMEOUT_MS = 10_000;

export const AUTHORIZE = "POST /v1/authorizations";
export const CAPTURE = "POST /v1/authorizations/:id/capture";

export interface AcquirerSecond {
  readonly second: number;
  readonly total: number;
  readonly operations: Readonly<Record<string, number>>;
}

export interface AcquirerStats {
  authorizations: number;
  approved: number;
  declined: number;
  authorizationAttempts: number;
  captures: number;
  voids: number;
  refunds: number;
  refundAttempts: number;
}

export interface PaymentsDeploymentOptions {
  pgUrl: string;
  /** The simulator's latency on every call. */
  acquirerLatencyMs: number;
  /** Payments' own limit on acquirer calls (PAYMENTS_ACQUIRER_RATE_PER_S); default its 200. */
  acquirerRatePerS?: number;
}

export interface PaymentsDeployment {
  readonly url: string;
  readonly acquirerUrl: string;
  /** The merchant key flash-sale charges with. */
  readonly apiKey: string;
  readonly schema: string;
  /** The simulator's arrivals per second, oldest first. */
  arrivals(): Promise<AcquirerSecond[]>;
  acquirerStats(): Promise<AcquirerStats>;
  /** Changes the simulator's knobs (`latencyMs`, `outage`, …). */
  setAcquirer(behaviour: Record<string, unknown>): Promise<void>;
  /** Forgets the simulator's payments, counters and arrivals (between a bench's runs). */
  resetAcquirer(): Promise<void>;
  /** A payment as payments reports it to the merchant. */
  payment(id: string): Promise<{ status: string; capturedMinor: string; amountMinor: string }>;
  /** SIGKILL of the payments process (a crash). */
  kill(): Promise<void>;
  /** Starts the payments process again on the same port and schema. */
  restart(): Promise<void>;
  /** Stops both processes and drops the schema. */
  close(): Promise<void>;
}

async function adminCall(url: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(ADMIN_TIMEOUT_MS),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`);
  return text === "" ? {} : JSON.parse(text);
}

async function answersReady(port: number): Promise<boolean> {
  return (await httpProbe(port, "/readyz"))?.status === 200;
}

export async function startPaymentsDeployment(
  options: PaymentsDeploymentOptions,
): Promise<PaymentsDeployment> {
  const schema = uniqueName("flash_payments");
  const started: { stop(): Promise<void> }[] = [];
  const dropSchema = async () => {
    const db = await openDatabase({
      system: "flash-sale",
      url: options.pgUrl,
      schema,
      pool: { maxConnections: 1 },
    });
    try {
      await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    } finally {
      await db.close();
    }
  };
  const close = async () => {
    for (const s of started.reverse()) await s.stop().catch(() => {});
    await dropSchema();
  };
  try {
    const acquirer: ServerProcess = await startServerProcess({
      name: "acquirer-sim",
      entry: acquirerEntry,
      env: {
        ACQUIRER_LATENCY_MS: String(options.acquirerLatencyMs),
        ACQUIRER_SEED: "flash-sale",
        ACQUIRER_MAX_PAYMENTS: "1000000",
      },
    });
    started.push(acquirer);
    const port = await freePort();
    const dir = await ownTempDir("casebook-flash-payments-");
    started.push({ stop: dir.remove });
    const engine = await EngineProcess.start(
      {
        name: "payments",
        command: process.execPath,
        args: () => [new URL(paymentsEntry).pathname],
        cwd: dir.dir,
        tempDir: dir.dir,
        env: {
          ...process.env,
          LOG_LEVEL: "warn",
          PORT: String(port),
          HOST: "127.0.0.1",
          DATABASE_URL: options.pgUrl,
          PAYMENTS_DB_SCHEMA: schema,
          ACQUIRER_URL: acquirer.url,
          PAYMENTS_ADMIN_TOKEN: ADMIN_TOKEN,
          PAYMENTS_BOOTSTRAP_MERCHANT: "off",
          PAYMENTS_ACQUIRER_RATE_PER_S: String(options.acquirerRatePerS ?? 200),
        },
        isReady: (p) => answersReady(p),
        requestStop: async (_port: number, child: ChildProcess) => void child.kill("SIGTERM"),
      },
      {
        readyTimeoutMs: READY_TIMEOUT_MS,
        stopTimeoutMs: 10_000,
        pickPort: async () => port,
        maxPortAttempts: 1,
      },
    );
    started.push({ stop: () => engine.shutdown() });
    const url = `http://127.0.0.1:${port}`;
    const res = await fetch(`${url}/v1/admin/merchants`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ id: "flash-sale", name: "Flash sale" }),
      signal: AbortSignal.timeout(ADMIN_TIMEOUT_MS),
    });
    if (res.status !== 201)
      throw new Error(`payments refused the merchant: ${res.status} ${await res.text()}`);
    const { apiKey } = (await res.json()) as { apiKey: { key: string } };
    return {
      url,
      acquirerUrl: acquirer.url,
      apiKey: apiKey.key,
      schema,
      arrivals: async () =>
        ((await adminCall(acquirer.url, "GET", "/admin/arrivals")) as { seconds: AcquirerSecond[] }).seconds,
      acquirerStats: async () => (await adminCall(acquirer.url, "GET", "/admin/stats")) as AcquirerStats,
      setAcquirer: async (behaviour) =>
        void (await adminCall(acquirer.url, "PUT", "/admin/behaviour", behaviour)),
      resetAcquirer: async () => void (await adminCall(acquirer.url, "POST", "/admin/reset")),
      payment: async (id) => {
        const r = await fetch(`${url}/v1/payments/${encodeURIComponent(id)}`, {
          headers: { authorization: `Bearer ${apiKey.key}` },
          signal: AbortSignal.timeout(ADMIN_TIMEOUT_MS),
        });
        if (r.status !== 200) throw new Error(`GET /v1/payments/${id} answered ${r.status}`);
        return (await r.json()) as { status: string; capturedMinor: string; amountMinor: string };
      },
      kill: () => engine.kill(),
      restart: () => engine.restart(),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
