/**
 * A system's claims file, `shared/claims/<name>.md`: one claim a line, `- ID text`
 * (`- FS-04 Atomic decrement: …`), as `shared/claims/README.md` describes. `casebook new`
 * turns each into a row of the README's claims table.
 *
 * @example
 * parseClaims("# flash-sale — claims\n\n- FS-01 Never sell more tickets than exist.\n");
 * // [{ id: "FS-01", text: "Never sell more tickets than exist." }]
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sharedDir } from "./architecture-map.ts";

export interface Claim {
  id: string;
  text: string;
}

const claimPattern = /^- ([A-Z]{1,6}-\d{1,3}[a-z]?) (.+)$/;

export function parseClaims(text: string): Claim[] {
  return text.split("\n").flatMap((line) => {
    const match = claimPattern.exec(line.trimEnd());
    return match === null ? [] : [{ id: match[1]!, text: match[2]!.trim() }];
  });
}

/** The claims file's path, and its claims (undefined when there is no such file). */
export function readClaims(root: string, name: string): { file: string; claims: Claim[] | undefined } {
  const file = join(sharedDir(root), "claims", `${name}.md`);
  return { file, claims: existsSync(file) ? parseClaims(readFileSync(file, "utf8")) : undefined };
}
