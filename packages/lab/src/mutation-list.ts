/**
 * A system's hand-picked mutations (`systems/<name>/test/mutations.json`), read and checked
 * before anything is changed: each entry names the claim it attacks, the file (relative to
 * the system's folder), one exact `find` text, its `replace`, and the test files that must
 * fail. A bad entry is refused with the entry's index and the field at fault, so a typo
 * never turns into a mutation that "survives" because it was never applied.
 *
 * @example
 * // systems/rate-limiter/test/mutations.json
 * [{ "id": "lua-clamp-abs", "claim": "RL-05", "file": "src/store/scripts/token-bucket-n.lua",
 *    "find": "math.max(0, now - ts)", "replace": "math.abs(now - ts)",
 *    "tests": ["test/clock-back-engine.test.ts"] }]
 * const mutations = readMutationList("systems/rate-limiter");
 */
import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join, normalize, relative, resolve, sep } from "node:path";
import { labErrors } from "./lab-errors.ts";

export interface Mutation {
  /** kebab-case, unique in the list: the report's row name. */
  readonly id: string;
  /** The claim whose "never" the mutation breaks (`RL-05`). */
  readonly claim: string;
  /** The mutated file, relative to the system's folder (`src/store/scripts/x.lua`; `../../packages/…` for a shared one). */
  readonly file: string;
  /** Exact text that occurs exactly once in `file`. */
  readonly find: string;
  readonly replace: string;
  /** Test files (relative to the system's folder) of which at least one must fail. */
  readonly tests: readonly string[];
}

/** The name of the list inside a system's folder. */
export const MUTATION_LIST_PATH = "test/mutations.json";

const ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const CLAIM = /^[A-Z]{2,4}-\d{2,3}$/;
const FIELDS = ["id", "claim", "file", "find", "replace", "tests"] as const;

function invalid(detail: string, field: string): Error {
  return labErrors.create("LAB_MUTATION_INVALID", { detail, fields: { field } });
}

/**
 * A path relative to the system's folder that stays inside the repository (`systems/<name>`
 * two levels down): a mechanism the system shares lives in `packages/`, and its mutation is
 * the system's too (`../../packages/infra/src/sql/lease-queue.ts`).
 */
function insidePath(value: unknown, where: string, systemDir: string): string {
  if (typeof value !== "string" || value === "") throw invalid(`${where} must be a non-empty string`, where);
  const clean = normalize(value);
  const fromRoot = relative(resolve(systemDir, "..", ".."), resolve(systemDir, clean));
  if (isAbsolute(value) || fromRoot === ".." || fromRoot.startsWith(`..${sep}`)) {
    throw invalid(
      `${where} must be relative to the system's folder, inside the repository, got ${JSON.stringify(value)}`,
      where,
    );
  }
  if (!existsSync(join(systemDir, clean)))
    throw invalid(`${where}: ${value} does not exist in ${systemDir}`, where);
  return clean;
}

function parseEntry(raw: unknown, index: number, systemDir: string): Mutation {
  const at = `[${index}]`;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw invalid(`${at} must be an object`, at);
  const entry = raw as Record<string, unknown>;
  const extra = Object.keys(entry).filter((k) => !(FIELDS as readonly string[]).includes(k));
  if (extra.length > 0) throw invalid(`${at} has unknown field(s) ${extra.join(", ")}`, `${at}.${extra[0]}`);
  const { id, claim, find, replace, tests } = entry;
  if (typeof id !== "string" || !ID.test(id)) throw invalid(`${at}.id must be kebab-case`, `${at}.id`);
  if (typeof claim !== "string" || !CLAIM.test(claim)) {
    throw invalid(`${at}.claim must be a claim id like RL-05`, `${at}.claim`);
  }
  if (typeof find !== "string" || find === "")
    throw invalid(`${at}.find must be a non-empty string`, `${at}.find`);
  if (typeof replace !== "string") throw invalid(`${at}.replace must be a string`, `${at}.replace`);
  if (replace === find) throw invalid(`${at}.replace equals find: nothing would change`, `${at}.replace`);
  if (!Array.isArray(tests) || tests.length === 0) {
    throw invalid(`${at}.tests must be a non-empty array of test files`, `${at}.tests`);
  }
  return {
    id,
    claim,
    file: insidePath(entry.file, `${at}.file`, systemDir),
    find,
    replace,
    tests: tests.map((t, i) => insidePath(t, `${at}.tests[${i}]`, systemDir)),
  };
}

/** Parses a list's JSON text; `systemDir` resolves the files it names. */
export function parseMutationList(text: string, systemDir: string): Mutation[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw labErrors.create("LAB_MUTATION_INVALID", { detail: "not JSON", fields: { field: "" }, cause });
  }
  if (!Array.isArray(raw)) throw invalid("the list must be a JSON array", "");
  const mutations = raw.map((entry, index) => parseEntry(entry, index, systemDir));
  const seen = new Set<string>();
  for (const m of mutations) {
    if (seen.has(m.id)) throw invalid(`id ${m.id} appears twice`, "id");
    seen.add(m.id);
  }
  return mutations;
}

export function readMutationList(systemDir: string): Mutation[] {
  const path = join(systemDir, MUTATION_LIST_PATH);
  if (!existsSync(path)) throw invalid(`${path} does not exist`, MUTATION_LIST_PATH);
  return parseMutationList(readFileSync(path, "utf8"), systemDir);
}
