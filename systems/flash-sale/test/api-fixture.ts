/**
 * The service as main() starts it — embedded PGlite in a temporary CASEBOOK_DATA, the
 * in-process stock, the admin API on, a manual clock — and the calls tests make against it
 * (in process, through Fastify's inject).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "@casebook/kit/clock";
import { main, type RunningSystem } from "../src/main.ts";

export const ADMIN_TOKEN = "flash-admin-token-for-tests-0123";
export const START_MS = Date.UTC(2026, 11, 1);

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: JSON answers are walked by key in tests
  json: any;
}

export interface ApiWorld {
  running: RunningSystem;
  clock: ManualClock;
  request(
    method: string,
    url: string,
    options?: { admin?: boolean; body?: unknown; headers?: Record<string, string> },
  ): Promise<Answer>;
  /** Joins the sale's room as `user`, lets the room admit it, fetches its token: the reserve headers. */
  admitted(saleId: string, user: string): Promise<Record<string, string>>;
  /** Reserves `quantity` as `user`, through the room. */
  reserve(saleId: string, user: string, quantity: number): Promise<Answer>;
  /** A sale through the admin API; its id. */
  sale(body?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

export async function apiWorld(env: NodeJS.ProcessEnv = {}): Promise<ApiWorld> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-flash-api-"));
  const clock = new ManualClock(START_MS);
  const running = await main(
    { PORT: "0", CASEBOOK_DATA: dir, LOG_LEVEL: "silent", FLASH_SALE_ADMIN_TOKEN: ADMIN_TOKEN, ...env },
    { clock },
  );
  const request: ApiWorld["request"] = async (method, url, opts = {}) => {
    const res = await running.service.app.inject({
      method: method as "GET",
      url,
      headers: {
        ...(opts.admin ? { authorization: `Bearer ${ADMIN_TOKEN}` } : {}),
        ...(opts.body === undefined ? {} : { "content-type": "application/json" }),
        ...opts.headers,
      },
      ...(opts.body === undefined ? {} : { payload: JSON.stringify(opts.body) }),
    });
    let json: unknown;
    try {
      json = res.json();
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, headers: res.headers, json };
  };
  let next = 0;
  const admitted: ApiWorld["admitted"] = async (saleId, user) => {
    const joined = await request("POST", `/v1/sales/${saleId}/entrants`, { body: { user } });
    if (joined.status !== 201) throw new Error(`join: ${joined.status} ${JSON.stringify(joined.json)}`);
    const secret = joined.json.secret as string;
    for (let i = 0; i < 100; i++) {
      const a = await request("POST", `/v1/sales/${saleId}/entrants/${user}/admission`, {
        headers: { "x-entrant-secret": secret },
      });
      if (a.json.state === "admitted")
        return { authorization: `Bearer ${a.json.token}`, "x-entrant-secret": secret };
      clock.advance(1_000);
      await running.rooms.tickAll();
    }
    throw new Error(`${user} was never admitted`);
  };
  return {
    running,
    clock,
    request,
    admitted,
    reserve: async (saleId, user, quantity) =>
      request("POST", `/v1/sales/${saleId}/holds`, {
        body: { quantity },
        headers: await admitted(saleId, user),
      }),
    sale: async (body = {}) => {
      const res = await request("POST", "/v1/admin/sales", {
        admin: true,
        body: {
          id: `sale-${next++}`,
          name: "test sale",
          tickets: 5,
          priceMinor: 5_000,
          currency: "USD",
          ...body,
        },
      });
      if (res.status !== 201) throw new Error(`sale not created: ${res.status} ${JSON.stringify(res.json)}`);
      return res.json.id as string;
    },
    close: async () => {
      await running.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
