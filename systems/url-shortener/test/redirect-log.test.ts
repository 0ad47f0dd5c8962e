/**
 * US-15's last clause: the redirect's click record is its access log — a redirect writes no
 * access line of its own (the visit goes to the click buffer instead), while other routes
 * still log theirs and a refused code is still logged (bounded). The redirect route on
 * infra's service base with a captured log, a store in memory and a real ClickBuffer.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createService } from "@casebook/infra/http/service";
import { ManualClock } from "@casebook/kit/clock";
import { registerRedirectRoute } from "../src/api/redirect-route.ts";
import { ClickBuffer } from "../src/domain/click-buffer.ts";
import { createMetrics } from "../src/metrics.ts";

test("US-15 a redirect writes no access-log line: its record is the click in the buffer", async (t) => {
  const lines: Record<string, unknown>[] = [];
  const service = createService({
    name: "url-shortener",
    version: "test",
    log: { level: "info", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } },
    defaultMetrics: false,
  });
  t.after(() => service.close());
  const buffer = new ClickBuffer({ maxEntries: 1_000 });
  registerRedirectRoute(service.app, {
    reader: {
      resolve: async (_domain, code) =>
        code === "known01"
          ? {
              target: "https://example.com/",
              status: 302,
              cacheMaxAgeS: 300,
              forwardQuery: true,
              expiresAtMs: null,
              disabled: false,
            }
          : undefined,
    },
    domains: [{ origin: "http://s.example", host: "s.example" }],
    clock: new ManualClock(Date.UTC(2026, 0, 1)),
    visits: buffer,
    metrics: createMetrics(service.registry, { version: "test" }),
  });
  // A route with the default policy, as the control: its line must appear.
  service.app.get("/control", async () => ({ ok: true }));
  for (let i = 0; i < 50; i++) {
    const res = await service.app.inject({ url: "/known01", headers: { host: "s.example" } });
    assert.equal(res.statusCode, 302);
  }
  await service.app.inject({ url: "/unknown", headers: { host: "s.example" } });
  await service.app.inject({ url: "/control" });
  const access = lines.filter((line) => line.msg === "request");
  assert.equal(access.filter((line) => line.status === 302).length, 0, "no access line per redirect");
  assert.equal(buffer.size, 51, "each visit is in the click buffer instead (50 clicks, 1 orphan)");
  assert.equal(access.filter((line) => line.status === 404).length, 1, "a refused code is still logged");
  assert.ok(
    access.some((line) => line.url === "/control"),
    "other routes keep their access line",
  );
});
