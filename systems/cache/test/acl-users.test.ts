/**
 * The ACL model on its own: passwords kept only as SHA-256, the `unrestricted` flag that lets
 * the per-command gate cost a boolean, rules applied all-or-nothing, key patterns by the
 * command's keys, subcommand rules, and what deleting a user does to a connection holding it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { allCommands } from "../src/api/commands/all-commands.ts";
import { globMatch } from "../src/api/commands/glob-match.ts";
import { AclUsers, sha256Hex } from "../src/domain/acl-users.ts";

const users = () => new AclUsers(allCommands, (pattern, key) => globMatch(pattern, key));

describe("ACL users", () => {
  test("the default user is on, nopass, all keys and commands: unrestricted, no AUTH needed", () => {
    const acl = users();
    assert.equal(acl.default.unrestricted, true);
    assert.equal(acl.defaultOpen, true);
    assert.equal(acl.describe(acl.default), "user default on nopass ~* &* +@all");
  });

  test("a password is kept only as its SHA-256; AUTH compares hashes", () => {
    const acl = users();
    assert.equal(acl.setUser("bob", ["on", ">hunter2", "allkeys", "allcommands"]), undefined);
    const bob = acl.get("bob")!;
    assert.deepEqual([...bob.passwords], [sha256Hex("hunter2")]);
    assert.doesNotMatch(JSON.stringify({ ...bob, passwords: [...bob.passwords] }), /hunter2/);
    assert.equal(acl.authenticate("bob", "hunter2"), bob);
    assert.equal(acl.authenticate("bob", "hunter3"), undefined);
    assert.equal(bob.unrestricted, true);
  });

  test("requirepass semantics: a password on default closes the fast path for new connections", () => {
    const acl = users();
    acl.setUser("default", ["resetpass", ">pw"]);
    assert.equal(acl.defaultOpen, false);
    assert.equal(acl.authenticate("default", "pw"), acl.default);
    acl.setUser("default", ["nopass"]);
    assert.equal(acl.defaultOpen, true);
  });

  test("a bad rule changes nothing, even after good ones in the same call", () => {
    const acl = users();
    acl.setUser("carl", ["on", ">a", "+get"]);
    const failure = acl.setUser("carl", ["off", "+set", "+nosuch"]);
    assert.deepEqual(failure, { rule: "+nosuch", reason: "Unknown command or category name in ACL" });
    const carl = acl.get("carl")!;
    assert.equal(carl.enabled, true);
    assert.equal(carl.allowed.has("set"), false);
  });

  test("commands, categories, subcommands and key patterns decide a denial", () => {
    const acl = users();
    acl.setUser("ops", ["on", "nopass", "~app:*", "~{tag}*", "+@read", "+config|get", "-keys"]);
    const ops = acl.get("ops")!;
    assert.equal(ops.unrestricted, false);
    assert.equal(acl.denial(ops, "get", ["app:1"]), undefined);
    assert.deepEqual(acl.denial(ops, "get", ["other"]), { kind: "key" });
    assert.deepEqual(acl.denial(ops, "mget", ["app:1", "other"]), { kind: "key" });
    assert.deepEqual(acl.denial(ops, "set", ["app:1"]), { kind: "command", name: "set" });
    assert.deepEqual(acl.denial(ops, "keys", []), { kind: "command", name: "keys" });
    assert.equal(acl.denial(ops, "config|get", []), undefined);
    assert.deepEqual(acl.denial(ops, "config|set", []), { kind: "command", name: "config|set" });
    acl.setUser("ops", ["reset"]);
    assert.equal(acl.describe(ops), "user ops off resetchannels -@all");
  });

  test("a deleted user is marked, so a connection holding it must authenticate again", () => {
    const acl = users();
    acl.setUser("temp", ["on", "nopass", "allkeys", "allcommands"]);
    const held = acl.get("temp")!;
    assert.equal(acl.deleteUsers(["temp", "default", "nobody"]), 1);
    assert.equal(held.deleted, true);
    assert.equal(held.unrestricted, false, "the connection leaves the fast path and meets the check");
    assert.deepEqual(acl.names(), ["default"]);
  });
});
