import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { spawnOrSkip } from "../src/server-engine.ts";
import { spawnNginx } from "../src/spawn-nginx.ts";

test("spawnNginx serves the caller's config on its own port and prefix dir, then stops and removes the dir", async (t) => {
  const nginx = await spawnOrSkip(t, () =>
    spawnNginx({
      http: (port) => `server { listen 127.0.0.1:${port}; location / { return 200 "hello from nginx\\n"; } }`,
    }),
  );
  if (!nginx) return;
  t.after(() => nginx.stop());
  assert.notEqual(nginx.port, 80);
  const res = await fetch(`${nginx.url}/any`);
  assert.equal(res.status, 200);
  assert.equal(await res.text(), "hello from nginx\n");
  assert.match(res.headers.get("server") ?? "", /nginx/);
  assert.ok(existsSync(`${nginx.dir}/error.log`));
  await nginx.stop();
  assert.equal(existsSync(nginx.dir), false);
});

test("a spawned nginx pauses, dies as a crash would, and restarts on the same port", async (t) => {
  const nginx = await spawnOrSkip(t, () =>
    spawnNginx({ http: (port) => `server { listen 127.0.0.1:${port}; location / { return 204; } }` }),
  );
  if (!nginx) return;
  t.after(() => nginx.stop());
  nginx.pause();
  await assert.rejects(fetch(nginx.url, { signal: AbortSignal.timeout(300) }), /abort|timeout/i);
  nginx.resume();
  assert.equal((await fetch(nginx.url)).status, 204);
  await nginx.kill();
  assert.equal(nginx.state, "exited");
  await assert.rejects(fetch(nginx.url), /fetch failed/);
  const port = nginx.port;
  await nginx.restart();
  assert.equal(nginx.port, port);
  assert.equal((await fetch(nginx.url)).status, 204);
});
