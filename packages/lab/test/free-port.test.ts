import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { freePort } from "../src/free-port.ts";

test("freePort returns a port that can be bound right away", async () => {
  const port = await freePort();
  assert.ok(port > 0 && port < 65_536);
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  await new Promise((r) => server.close(r));
});
