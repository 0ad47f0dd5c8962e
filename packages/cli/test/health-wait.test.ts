import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { test } from "node:test";
import { probeStatus, waitForHealthy } from "../src/health-wait.ts";
import { freePort } from "./fixtures.ts";

async function serve(
  t: { after(fn: () => Promise<void>): void },
  handler: Parameters<typeof createServer>[1],
) {
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const fast = { timeoutMs: 5_000, intervalMs: 10, requestTimeoutMs: 1_000 };

test("healthy once /healthz answers 200, after earlier 503s", async (t) => {
  let calls = 0;
  const url = await serve(t, (req, res) => {
    calls++;
    res.writeHead(req.url === "/healthz" && calls >= 3 ? 200 : 503).end();
  });
  assert.equal(await waitForHealthy(url, fast), "healthy");
  assert.equal(calls, 3);
});

test("timeout when /healthz never answers 200 within the bound", async (t) => {
  const url = await serve(t, (_req, res) => res.writeHead(503).end());
  assert.equal(await waitForHealthy(url, { ...fast, timeoutMs: 100 }), "timeout");
});

test("a probe that hangs is cut at requestTimeoutMs", async (t) => {
  const url = await serve(t, () => {});
  const started = performance.now();
  assert.equal(await probeStatus(new URL("/healthz", url), 100), 0);
  assert.ok(performance.now() - started < 2_000);
});

test("aborted when the signal fires, e.g. because the child died", async () => {
  const port = await freePort(); // nothing listens: every probe fails
  const controller = new AbortController();
  const waiting = waitForHealthy(`http://127.0.0.1:${port}`, { ...fast, signal: controller.signal });
  controller.abort();
  assert.equal(await waiting, "aborted");
});
