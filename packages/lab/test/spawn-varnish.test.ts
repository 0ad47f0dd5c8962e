import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { spawnOrSkip } from "../src/server-engine.ts";
import { spawnVarnish } from "../src/spawn-varnish.ts";

test("spawnVarnish caches a node:http backend with the caller's VCL: the second GET is a hit", async (t) => {
  let origin = 0;
  const backend = createServer((req, res) => {
    if (req.url === "/page") origin++;
    res.writeHead(200, { "content-type": "text/plain", "cache-control": "max-age=60" });
    res.end("from the origin\n");
  });
  await new Promise<void>((resolve) => backend.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise((resolve) => backend.close(resolve)));
  const { port } = backend.address() as AddressInfo;
  const varnish = await spawnOrSkip(t, () =>
    spawnVarnish({ vcl: `vcl 4.1;\nbackend default { .host = "127.0.0.1"; .port = "${port}"; }\n` }),
  );
  if (!varnish) return;
  t.after(() => varnish.stop());
  const first = await fetch(`${varnish.url}/page`);
  assert.equal(await first.text(), "from the origin\n");
  const second = await fetch(`${varnish.url}/page`);
  assert.equal(await second.text(), "from the origin\n");
  assert.match(second.headers.get("via") ?? "", /varnish/i);
  assert.ok(Number(second.headers.get("age") ?? "0") >= 0);
  assert.equal(origin, 1, "the second GET /page was a hit");
  await varnish.stop();
});
