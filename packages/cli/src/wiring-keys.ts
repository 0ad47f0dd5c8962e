/**
 * The keys `casebook up` mints to wire systems together — a caller's key for its callee
 * (`call-plan.ts`), the scraper's tenant key (`scrape-plan.ts`) — kept in the data root
 * (`wiring-keys.json`, mode 0600), so the next launch hands out the same ones. A callee registers
 * every granted key at start and keeps it: a fresh key per launch would leave each earlier one
 * registered and valid. Deleting the file (or the data root) rotates them.
 *
 * @example
 * const keys = keptWiringKeys(join(dataRoot, "wiring-keys.json"), randomBytes);
 * keys.keyFor("calls flash-sale→payments", "sk"); // "sk_…", the same at the next launch
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { apiKeyScheme, type RandomBytes } from "@casebook/kit/api-key";

export interface WiringKeys {
  /** The key of `kind` for `purpose`: the one kept for it, else a new one (kept from now on). */
  keyFor(purpose: string, kind: string): string;
}

/** A new key at every call: for plans that are not launched. */
export function freshWiringKeys(randomBytes: RandomBytes): WiringKeys {
  return { keyFor: (_purpose, kind) => apiKeyScheme(kind).issue(randomBytes).key };
}

/** Keys kept in `file` across launches; an unreadable file or a key of another kind is replaced. */
export function keptWiringKeys(file: string, randomBytes: RandomBytes): WiringKeys {
  const kept = readKept(file);
  return {
    keyFor(purpose, kind) {
      const scheme = apiKeyScheme(kind);
      const known = kept[purpose];
      if (known !== undefined && scheme.parse(known) !== undefined) return known;
      const key = scheme.issue(randomBytes).key;
      kept[purpose] = key;
      mkdirSync(dirname(file), { recursive: true });
      const temp = `${file}.${process.pid}.tmp`;
      writeFileSync(temp, `${JSON.stringify(kept, null, 2)}\n`, { mode: 0o600 });
      renameSync(temp, file);
      return key;
    },
  };
}

function readKept(file: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return {};
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return {};
  return Object.fromEntries(
    Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
  );
}
