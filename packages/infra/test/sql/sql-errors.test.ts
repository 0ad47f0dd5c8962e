import assert from "node:assert/strict";
import { test } from "node:test";
import { isConnectionLoss } from "../../src/sql/pg-database.ts";
import { sqlErrors } from "../../src/sql/sql-errors.ts";
import {
  isCheckViolation,
  isDeadlock,
  isForeignKeyViolation,
  isLockNotAvailable,
  isRetryableTransactionError,
  isSerializationFailure,
  isUniqueViolation,
  SqlState,
  sqlState,
} from "../../src/sql/sql-state.ts";

test("every sql error code has a 4xx/5xx status and a message saying what to do", () => {
  for (const [code, spec] of Object.entries(sqlErrors.specs)) {
    const error = sqlErrors.create(code as keyof typeof sqlErrors.specs);
    assert.equal(error.code, code);
    assert.equal(error.status, spec.status);
    assert.match(code, /^SQL_/);
    assert.ok(error.message.length > 20, code);
  }
  assert.equal(sqlErrors.specs.SQL_UNAVAILABLE.status, 503);
});

test("sqlState reads only five-character SQLSTATEs", () => {
  assert.equal(sqlState({ code: "23505" }), "23505");
  assert.equal(sqlState({ code: "40P01" }), "40P01");
  assert.equal(sqlState({ code: "ECONNREFUSED" }), undefined);
  assert.equal(sqlState(sqlErrors.create("SQL_UNAVAILABLE")), undefined);
  assert.equal(sqlState("23505"), undefined);
  assert.equal(sqlState(null), undefined);
});

test("predicates branch on the SQLSTATE", () => {
  const err = (code: string, constraint?: string) => Object.assign(new Error(code), { code, constraint });
  assert.ok(isUniqueViolation(err(SqlState.uniqueViolation, "users_email_key"), "users_email_key"));
  assert.ok(!isUniqueViolation(err(SqlState.uniqueViolation, "users_pkey"), "users_email_key"));
  assert.ok(isForeignKeyViolation(err("23503")));
  assert.ok(isCheckViolation(err("23514")));
  assert.ok(isSerializationFailure(err("40001")) && isRetryableTransactionError(err("40001")));
  assert.ok(isDeadlock(err("40P01")) && isRetryableTransactionError(err("40P01")));
  assert.ok(isLockNotAvailable(err("55P03")) && !isRetryableTransactionError(err("55P03")));
  assert.ok(!isRetryableTransactionError(err("23505")));
});

test("losing the server is told apart from a wrong statement", () => {
  const lost = [
    Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }),
    new Error("timeout exceeded when trying to connect"),
    new Error("Connection terminated unexpectedly"),
    Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }),
    Object.assign(new Error("sorry, too many clients already"), { code: "53300" }),
    Object.assign(new Error("connection failure"), { code: "08006" }),
  ];
  for (const err of lost) assert.ok(isConnectionLoss(err), err.message);
  const wrong = [
    Object.assign(new Error("duplicate key"), { code: "23505" }),
    Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014" }),
    new TypeError("Do not know how to serialize a BigInt"),
    "not an error",
  ];
  for (const err of wrong) assert.ok(!isConnectionLoss(err), String(err));
});
