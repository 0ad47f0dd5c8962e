/**
 * The link store's contract, one suite on PGlite (memory) and the real PostgreSQL (a fresh
 * schema): a generated code is a plain insert; an alias a conditional one; the redirect's read
 * by key returns what the decision needs (expiry and the disabled flag included); updates,
 * deletes and listings are scoped to the owning workspace; the reaper deletes only expired rows.
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import { sqlBackends } from "@casebook/lab/sql-backends";
import { LinkRepository, type NewLink } from "../src/store/link-repository.ts";
import { migrateShortenerStore } from "../src/store/migrate.ts";

const T0 = Date.UTC(2026, 0, 1);

function newLink(code: string, overrides: Partial<NewLink> = {}): NewLink {
  return {
    domain: "s.example",
    code,
    workspaceId: "w1",
    target: `https://example.com/${code}`,
    status: 302,
    cacheMaxAgeS: 300,
    forwardQuery: true,
    isAlias: false,
    tags: [],
    expiresAt: null,
    nowMs: T0,
    ...overrides,
  };
}

contractSuite(
  "link store",
  sqlBackends({
    system: "url-shortener",
    prefix: "us_links",
    prepare: async (db) => {
      await migrateShortenerStore(db);
      await db.query(
        "INSERT INTO workspaces (id, name, created_at) VALUES ('w1', 'one', now()), ('w2', 'two', now())",
      );
    },
    subject: (db) => new LinkRepository(db),
  }),
  (it) => {
    it("a generated code is stored as given and read back by key", async (links) => {
      await links.insertGenerated(newLink("gen0001"));
      assert.deepEqual(await links.resolve("s.example", "gen0001"), {
        target: "https://example.com/gen0001",
        status: 302,
        cacheMaxAgeS: 300,
        forwardQuery: true,
        expiresAtMs: null,
        disabled: false,
      });
      assert.equal(await links.resolve("other.example", "gen0001"), undefined, "codes are per domain");
    });

    it("US-18 an alias is a conditional insert: the second one on the same domain writes nothing", async (links) => {
      assert.ok(await links.insertAlias(newLink("my-alias", { isAlias: true })));
      const again = await links.insertAlias(
        newLink("my-alias", { isAlias: true, target: "https://other.example/" }),
      );
      assert.equal(again, undefined);
      assert.equal((await links.resolve("s.example", "my-alias"))?.target, "https://example.com/my-alias");
      assert.ok(await links.insertAlias(newLink("my-alias", { isAlias: true, domain: "t.example" })));
    });

    it("updates and deletes are the owner's only; the patch returns the link before and after", async (links) => {
      await links.insertGenerated(newLink("own0001", { status: 301 }));
      assert.equal(
        await links.update("w2", "s.example", "own0001", { target: "https://x.test/" }, T0),
        undefined,
      );
      const changed = await links.update(
        "w1",
        "s.example",
        "own0001",
        { target: "https://x.test/", tags: ["a"] },
        T0 + 1,
      );
      assert.equal(changed?.before.target, "https://example.com/own0001");
      assert.equal(changed?.before.status, 301);
      assert.equal(changed?.after.target, "https://x.test/");
      assert.deepEqual(changed?.after.tags, ["a"]);
      assert.equal(await links.remove("w2", "s.example", "own0001"), false);
      assert.equal(await links.remove("w1", "s.example", "own0001"), true);
      assert.equal(await links.resolve("s.example", "own0001"), undefined);
    });

    it("US-12 the read returns the expiry for the decision; the reaper deletes expired rows only", async (links) => {
      await links.insertGenerated(newLink("exp0001", { expiresAt: new Date(T0 + 1_000) }));
      await links.insertGenerated(newLink("exp0002", { expiresAt: new Date(T0 + 60_000) }));
      await links.insertGenerated(newLink("exp0003"));
      assert.equal((await links.resolve("s.example", "exp0001"))?.expiresAtMs, T0 + 1_000);
      assert.equal(await links.reapExpired(T0 + 2_000, 100), 1);
      assert.equal(await links.resolve("s.example", "exp0001"), undefined);
      assert.ok(await links.resolve("s.example", "exp0002"));
      assert.ok(await links.resolve("s.example", "exp0003"));
    });

    it("an admin's disable keeps the row and flags it for the read", async (links) => {
      await links.insertGenerated(newLink("dis0001"));
      assert.equal(await links.setDisabled("s.example", "dis0001", { reason: "phishing" }, T0), true);
      assert.equal((await links.resolve("s.example", "dis0001"))?.disabled, true);
      assert.equal(await links.setDisabled("s.example", "nope000", { reason: "x" }, T0), false);
    });

    it("the listing is the workspace's, newest first, by keyset pages and tag", async (links) => {
      for (let i = 0; i < 5; i++) {
        await links.insertGenerated(
          newLink(`lst000${i}`, { workspaceId: "w2", nowMs: T0 + i, tags: i % 2 ? ["odd"] : [] }),
        );
      }
      const first = await links.list("w2", { limit: 2 });
      assert.deepEqual(
        first.map((l) => l.code),
        ["lst0004", "lst0003"],
      );
      const next = await links.list("w2", { limit: 10, after: first[1] });
      assert.deepEqual(
        next.map((l) => l.code),
        ["lst0002", "lst0001", "lst0000"],
      );
      const odd = await links.list("w2", { limit: 10, tag: "odd" });
      assert.deepEqual(
        odd.map((l) => l.code),
        ["lst0003", "lst0001"],
      );
    });
  },
);
