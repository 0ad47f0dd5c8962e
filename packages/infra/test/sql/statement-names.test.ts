import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DERIVED_NAME_PREFIX, StatementNames } from "../../src/sql/statement-names.ts";

describe("StatementNames: which texts pg prepares by themselves", () => {
  test("one text, one name, whoever asks; another text, another name", () => {
    const names = new StatementNames(8);
    const a = names.nameOf("SELECT balance FROM accounts WHERE id = $1", 1) ?? "";
    assert.ok(a.startsWith(DERIVED_NAME_PREFIX));
    assert.ok(a.length <= 63, "a PostgreSQL identifier");
    assert.equal(names.nameOf("SELECT balance FROM accounts WHERE id = $1", 1), a);
    assert.equal(new StatementNames(8).nameOf("SELECT balance FROM accounts WHERE id = $1", 1), a);
    assert.notEqual(names.nameOf("SELECT balance FROM accounts WHERE id = $2", 2), a);
  });

  test("a text that returns * stays unnamed; count(*) and a product do not return *", () => {
    const names = new StatementNames(32);
    for (const text of [
      "SELECT * FROM payments WHERE id = $1",
      "select p.* from payments p where id = $1",
      'SELECT id, "p".* FROM payments p WHERE id = $1',
      "INSERT INTO payments (id) VALUES ($1) RETURNING *",
      "UPDATE payments t SET n = $2 WHERE id = $1 RETURNING t.*",
    ])
      assert.equal(names.nameOf(text, 1), undefined, text);
    assert.ok(names.nameOf("SELECT count(*) AS n FROM payments WHERE merchant_id = $1", 1));
    assert.ok(names.nameOf("SELECT amount * $2 AS scaled FROM payments WHERE id = $1", 2));
  });

  test("no parameters, a limit of 0, or past the limit: unnamed, and the seen set stops growing", () => {
    assert.equal(new StatementNames(8).nameOf("SELECT 1", 0), undefined);
    assert.equal(new StatementNames(0).nameOf("SELECT $1::int", 1), undefined);
    const names = new StatementNames(2);
    const first = names.nameOf("SELECT $1::int AS a", 1);
    assert.ok(names.nameOf("SELECT $1::int AS b", 1));
    assert.equal(names.nameOf("SELECT $1::int AS c", 1), undefined, "the third text");
    assert.equal(names.size, 2);
    assert.equal(
      names.nameOf("SELECT $1::int AS a", 1),
      first,
      "texts named before the limit keep their names",
    );
    assert.throws(() => new StatementNames(-1), RangeError);
    assert.throws(() => new StatementNames(1.5), RangeError);
  });
});
