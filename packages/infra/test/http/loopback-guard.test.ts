import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "@casebook/kit/config";
import { isLoopbackHost, requireCredentialsBeyondLoopback } from "../../src/http/loopback-guard.ts";

test("isLoopbackHost: localhost, 127/8 and ::1 only; wildcards, other addresses and names are not", () => {
  for (const host of ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "::ffff:127.0.0.1"])
    assert.equal(isLoopbackHost(host), true, host);
  for (const host of ["0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "8.8.8.8", "example.com", "my-host", ""])
    assert.equal(isLoopbackHost(host), false, host);
});

test("a listener beyond loopback without credentials refuses to start, in one line naming the setting", () => {
  const guard = (host: string, credentialsSet: boolean) =>
    requireCredentialsBeyondLoopback({
      host,
      credentialsSet,
      setting: "DEMO_TOKEN",
      credential: "a bearer token",
    });
  assert.doesNotThrow(() => guard("127.0.0.1", false));
  assert.doesNotThrow(() => guard("0.0.0.0", true));
  assert.throws(
    () => guard("0.0.0.0", false),
    (error) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.problems.length, 1);
      const [problem] = error.problems;
      assert.equal(problem?.env, "DEMO_TOKEN");
      assert.equal(
        problem?.message,
        "HOST=0.0.0.0 listens beyond loopback without credentials: set DEMO_TOKEN to a bearer token, or listen on 127.0.0.1",
      );
      assert.doesNotMatch(problem?.message ?? "", /\n/);
      return true;
    },
  );
});
