/**
 * The edge tests' shared pieces: a private nginx (lab's spawnNginx, Debian's `nginx` and
 * `libnginx-mod-http-cache-purge`) with src/edge/nginx-edge-config.ts in front of main(), and
 * the calls the tests make through it. Skips (fails in CI with CASEBOOK_REQUIRE_ENGINES=1)
 * when nginx is not installed.
 */
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { spawnOrSkip } from "@casebook/lab/server-engine";
import { type SpawnedNginx, spawnNginx } from "@casebook/lab/spawn-nginx";
import { edgeHttpBlock, edgeMainDirectives } from "../src/edge/nginx-edge-config.ts";
import type { RunningSystem } from "../src/main.ts";
import { ADMIN_TOKEN } from "./api-fixture.ts";

export const EDGE_TOKEN = "edge-token-for-these-tests";

/** An nginx edge in front of `origin` (`host:port`); stopped after the test. */
export async function startEdge(
  t: TestContext,
  options: { origin: string; domain: string; accessLog: string },
): Promise<SpawnedNginx | undefined> {
  const nginx = await spawnOrSkip(t, () =>
    spawnNginx({
      main: edgeMainDirectives(),
      http: (port, dir) =>
        edgeHttpBlock({
          port,
          dir,
          origin: options.origin,
          domains: [options.domain],
          token: EDGE_TOKEN,
          accessLog: options.accessLog,
        }),
      readyPath: "/healthz",
    }),
  );
  if (nginx) t.after(() => nginx.stop());
  return nginx;
}

/** The origin's own count of answers of GET /{code}: how many requests reached it. */
export async function originRedirects(running: RunningSystem): Promise<number> {
  const text = await (await fetch(`${running.url}/metrics`)).text();
  let total = 0;
  for (const match of text.matchAll(/^url_shortener_redirects_total\{outcome="(\d+)"\} (\d+)$/gm))
    total += Number(match[2]);
  return total;
}

/** A workspace made through the admin API (the service runs with ADMIN_TOKEN); its first API key. */
export async function newWorkspaceKey(running: RunningSystem, id: string): Promise<string> {
  const created = await fetch(`${running.url}/v1/admin/workspaces`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ id, name: id }),
  });
  assert.equal(created.status, 201);
  return ((await created.json()) as { apiKey: { key: string } }).apiKey.key;
}

export async function shorten(
  running: RunningSystem,
  apiKey: string,
  body: Record<string, unknown>,
): Promise<string> {
  const res = await fetch(`${running.url}/v1/links`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 201);
  return ((await res.json()) as { code: string }).code;
}

export interface Hop {
  status: number;
  location: string | null;
  cache: string | null;
}

/** A GET (through the edge, or not), not following the redirect. */
export async function hop(url: string, headers: Record<string, string> = {}): Promise<Hop> {
  const res = await fetch(url, { redirect: "manual", headers });
  await res.body?.cancel();
  return {
    status: res.status,
    location: res.headers.get("location"),
    cache: res.headers.get("x-cache-status"),
  };
}

/** Waits until `check` holds, polling; bounded. */
export async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
