/**
 * Starts an acquirer simulator on port 0 with a ManualClock and a seeded random
 * source, closed when the test ends; `call` sends JSON and parses the answer.
 */
import type { TestContext } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { type AcquirerSim, type AcquirerSimOptions, createAcquirerSim } from "../src/sim/acquirer-sim.ts";

/** 2026-10-22T12:00:00Z: mid-day, so a test can act "today" and read the file "tomorrow". */
export const START_MS = Date.UTC(2026, 9, 22, 12);
export const TODAY = "2026-10-22";
export const DAY_MS = 86_400_000;

export interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown> & { [key: string]: unknown };
  text: string;
}

export interface SimFixture {
  sim: AcquirerSim;
  url: string;
  clock: ManualClock;
  call(method: string, path: string, body?: unknown, init?: RequestInit): Promise<Answer>;
}

export async function startSim(t: TestContext, options: AcquirerSimOptions = {}): Promise<SimFixture> {
  const clock = new ManualClock(START_MS);
  const sim = createAcquirerSim({
    clock,
    rng: seededRandom("acquirer-sim-test"),
    log: { level: "silent" },
    defaultMetrics: false,
    ...options,
  });
  const { url } = await sim.listen({ port: 0 });
  t.after(() => sim.close());
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    init: RequestInit = {},
  ): Promise<Answer> => {
    const res = await fetch(`${url}${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
      ...init,
    });
    const text = await res.text();
    const json = res.headers.get("content-type")?.includes("json") && text !== "" ? JSON.parse(text) : {};
    return { status: res.status, headers: res.headers, body: json, text };
  };
  return { sim, url, clock, call };
}

let counter = 0;

/** A valid authorization body; `key` defaults to a fresh one. */
export function authorization(overrides: Record<string, unknown> = {}) {
  counter += 1;
  return {
    idempotencyKey: `pay-${counter}`,
    merchantId: "merchant-1",
    amountMinor: "5000",
    currency: "BRL",
    cardToken: "tok_visa_4242",
    ...overrides,
  };
}
