/**
 * The service as main() starts it — embedded PGlite in a temporary CASEBOOK_DATA, the admin
 * API on, two short domains, a manual clock — and the calls tests make against it
 * (in process, through Fastify's inject: no socket, no port).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "@casebook/kit/clock";
import type { TargetVerifier } from "../src/domain/target-verifier.ts";
import type { VisitSink } from "../src/domain/visit.ts";
import { main, type RunningSystem } from "../src/main.ts";

export const ADMIN_TOKEN = "admin-token-for-tests-0123456789";
export const DOMAIN_A = "localhost:8109";
export const DOMAIN_B = "go.example.test";
/** 2026-01-01T00:00:00Z: a fixed start, so expiries are exact. */
export const START_MS = Date.UTC(2026, 0, 1);

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
  // biome-ignore lint/suspicious/noExplicitAny: JSON answers are walked by key in tests
  json: any;
}

export interface ApiWorld {
  running: RunningSystem;
  clock: ManualClock;
  request(
    method: string,
    url: string,
    options?: { key?: string; body?: unknown; host?: string; headers?: Record<string, string> },
  ): Promise<Answer>;
  /** A new workspace and its key, through the admin API. */
  workspace(id: string): Promise<string>;
  close(): Promise<void>;
}

export async function apiWorld(
  env: NodeJS.ProcessEnv = {},
  options: { visits?: VisitSink; verifier?: TargetVerifier } = {},
): Promise<ApiWorld> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-us-api-"));
  const clock = new ManualClock(START_MS);
  const running = await main(
    {
      PORT: "0",
      CASEBOOK_DATA: dir,
      LOG_LEVEL: "silent",
      URL_SHORTENER_ADMIN_TOKEN: ADMIN_TOKEN,
      URL_SHORTENER_DOMAINS: `http://${DOMAIN_A},https://${DOMAIN_B}`,
      URL_SHORTENER_BLOCKED_DOMAINS: "evil.test",
      URL_SHORTENER_BLOCKED_PATTERNS: "/phish",
      ...env,
    },
    { clock, ...options },
  );
  const request: ApiWorld["request"] = async (method, url, opts = {}) => {
    const res = await running.service.app.inject({
      method: method as "GET",
      url,
      headers: {
        host: opts.host ?? DOMAIN_A,
        ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
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
    return { status: res.statusCode, headers: res.headers, body: res.body, json };
  };
  return {
    running,
    clock,
    request,
    async workspace(id) {
      const res = await request("POST", "/v1/admin/workspaces", { key: ADMIN_TOKEN, body: { id, name: id } });
      if (res.status !== 201) throw new Error(`workspace ${id}: ${res.status} ${res.body}`);
      return res.json.apiKey.key as string;
    },
    async close() {
      await running.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
