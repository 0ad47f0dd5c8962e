import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { cliErrors } from "../src/cli-errors.ts";
import { assertPortsFree, portBindError } from "../src/port-check.ts";
import { freePort } from "./fixtures.ts";

test("a free port binds; a taken one reports EADDRINUSE and is named with the way around it", async (t) => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const taken = (server.address() as { port: number }).port;
  const free = await freePort();
  assert.equal(await portBindError("127.0.0.1", free), undefined);
  assert.equal(await portBindError("127.0.0.1", taken), "EADDRINUSE");

  await assertPortsFree([{ name: "alpha", host: "127.0.0.1", port: free }], false);
  await assert.rejects(
    assertPortsFree(
      [
        { name: "alpha", host: "127.0.0.1", port: free },
        { name: "beta", host: "127.0.0.1", port: taken },
      ],
      false,
    ),
    (error) => {
      assert.ok(cliErrors.is(error, "CLI_PORT_TAKEN"));
      assert.match(error.message, new RegExp(`beta needs 127\\.0\\.0\\.1:${taken} \\(already in use`));
      assert.doesNotMatch(error.message, /alpha/);
      assert.match(String(error.fields.hint), /--port beta=8150/);
      return true;
    },
  );
});

test("an address the machine does not have is reported as such", async () => {
  await assert.rejects(
    assertPortsFree([{ name: "alpha", host: "192.0.2.1", port: 8101 }], true),
    /no such address; check --host/,
  );
});
