import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { tcpReachable, uniqueName } from "../src/test-engines.ts";

test("tcpReachable tells an open port from a closed one", async () => {
  const server = createServer((s) => s.end());
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  assert.equal(await tcpReachable("127.0.0.1", port), true);
  await new Promise<void>((r) => server.close(() => r()));
  assert.equal(await tcpReachable("127.0.0.1", port), false);
});

test("uniqueName never repeats within a process", () => {
  const names = new Set(Array.from({ length: 1_000 }, () => uniqueName("t")));
  assert.equal(names.size, 1_000);
});
