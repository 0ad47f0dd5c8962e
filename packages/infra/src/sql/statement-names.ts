/**
 * Automatic prepared statements for `pg`, as pgx's statement cache, postgres.js (`prepare: true`)
 * and asyncpg do them: a parameterized statement text gets a name derived from the text, so each
 * connection parses and plans it once and every later call sends only Bind/Execute. On a hot path
 * of many small statements the parse and the plan are a large part of the server's CPU (issue 14:
 * a fifth of PostgreSQL's time per payment was `raw_parser` and the planner).
 *
 * Bounded: at most `limit` distinct texts are ever decided, named or not (a system's statements
 * are constants of its code; a text built per call with a varying shape would otherwise grow
 * every connection's prepared set without end) — past it, new texts run unnamed, as before.
 *
 * Left unnamed on purpose: a text that returns `*` (`SELECT *`, `RETURNING t.*`). A migration
 * that adds a column while the connection lives would change that statement's result type, and
 * PostgreSQL refuses to run a prepared statement whose result type changed ("cached plan must
 * not change result type", 0A000) until the connection ends. Any other schema change is fine:
 * the server re-plans a prepared statement when a table it uses changes.
 *
 * @example
 * const names = new StatementNames(256);
 * names.nameOf("SELECT balance FROM accounts WHERE id = $1"); // "cb_3f0a…" — the same text, the same name
 * names.nameOf("SELECT * FROM accounts WHERE id = $1");       // undefined: returns `*`
 */
import { createHash } from "node:crypto";

/** A result list with `*` in it: after SELECT, RETURNING or a comma, bare or qualified (`t.*`). */
const RETURNS_STAR = /(?:\bSELECT|\bRETURNING|,)\s*(?:(?:"[^"]+"|\w+)\.)?\*/i;

/** Prefix of every derived name; explicit names (`ledger_write`) never need it. */
export const DERIVED_NAME_PREFIX = "cb_";

export class StatementNames {
  readonly limit: number;
  readonly #names = new Map<string, string | undefined>();

  /** `limit`: most distinct texts decided, named or not (0: none named). */
  constructor(limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 0)
      throw new RangeError(`limit must be an integer ≥ 0: ${limit}`);
    this.limit = limit;
  }

  /** The name `text` runs under, or undefined: unnamed (no parameters, returns `*`, or past the limit). */
  nameOf(text: string, paramCount: number): string | undefined {
    if (paramCount === 0 || this.limit === 0) return undefined;
    const known = this.#names.get(text);
    if (known !== undefined || this.#names.has(text)) return known;
    if (this.#names.size >= this.limit) return undefined;
    const name = RETURNS_STAR.test(text)
      ? undefined
      : DERIVED_NAME_PREFIX + createHash("sha256").update(text).digest("hex").slice(0, 32);
    this.#names.set(text, name);
    return name;
  }

  /** Distinct texts seen and decided (named or not), at most `limit`. */
  get size(): number {
    return this.#names.size;
  }
}
