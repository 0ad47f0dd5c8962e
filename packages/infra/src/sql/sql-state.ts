/**
 * SQLSTATE codes callers branch on. Both engines throw their own error class, but
 * both put the five-character SQLSTATE in `err.code` (plus `constraint`, `table`,
 * `detail` where Postgres gives them); these predicates read only that.
 *
 * @example
 * try {
 *   await db.query("INSERT INTO idempotency_keys (key) VALUES ($1)", [key]);
 * } catch (err) {
 *   if (isUniqueViolation(err, "idempotency_keys_pkey")) return replayStoredResponse(key);
 *   throw err;
 * }
 */
export const SqlState = {
  uniqueViolation: "23505",
  foreignKeyViolation: "23503",
  notNullViolation: "23502",
  checkViolation: "23514",
  exclusionViolation: "23P01",
  serializationFailure: "40001",
  deadlockDetected: "40P01",
  lockNotAvailable: "55P03",
  queryCanceled: "57014",
  raiseException: "P0001",
  undefinedTable: "42P01",
  syntaxError: "42601",
} as const;

const SQLSTATE_PATTERN = /^[0-9A-Z]{5}$/;

/** The SQLSTATE of an engine error, or undefined for anything else (network errors, our own errors). */
export function sqlState(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" && SQLSTATE_PATTERN.test(code) ? code : undefined;
}

/** The constraint an integrity error names, when the engine reported one. */
export function sqlConstraint(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const constraint = (err as { constraint?: unknown }).constraint;
  return typeof constraint === "string" ? constraint : undefined;
}

/** 23505; with `constraint`, only a violation of that constraint. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  return (
    sqlState(err) === SqlState.uniqueViolation &&
    (constraint === undefined || sqlConstraint(err) === constraint)
  );
}

export function isForeignKeyViolation(err: unknown): boolean {
  return sqlState(err) === SqlState.foreignKeyViolation;
}

export function isCheckViolation(err: unknown): boolean {
  return sqlState(err) === SqlState.checkViolation;
}

/** 40001: a SERIALIZABLE / REPEATABLE READ transaction lost a conflict; rerun it whole. */
export function isSerializationFailure(err: unknown): boolean {
  return sqlState(err) === SqlState.serializationFailure;
}

/** 40P01: Postgres broke a lock cycle by aborting this transaction; rerun it whole. */
export function isDeadlock(err: unknown): boolean {
  return sqlState(err) === SqlState.deadlockDetected;
}

/** 55P03: `lock_timeout` expired or `NOWAIT` found the row locked. */
export function isLockNotAvailable(err: unknown): boolean {
  return sqlState(err) === SqlState.lockNotAvailable;
}

/** True when rerunning the WHOLE transaction may succeed (class 40: serialization failure, deadlock). */
export function isRetryableTransactionError(err: unknown): boolean {
  return sqlState(err)?.startsWith("40") ?? false;
}
