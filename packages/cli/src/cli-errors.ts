/**
 * The CLI's error registry. The HTTP status each code carries is only there
 * because every Casebook registry has one; what the shell sees is the exit code
 * from {@link exitCodeOf}: 2 for a command line the user can fix by retyping it,
 * 1 for everything else.
 *
 * @example
 * throw cliErrors.create("CLI_USAGE", { detail: "unknown command 'lsit'", fields: { hint: "Did you mean 'list'?" } });
 */
import { defineErrors } from "@casebook/kit/errors";

export const cliErrors = defineErrors({
  CLI_USAGE: { status: 400, message: "The command line is not valid; run `casebook --help`." },
  CLI_SYSTEM_UNKNOWN: { status: 404, message: "No system has this name; run `casebook list`." },
  CLI_ROOT_NOT_FOUND: {
    status: 500,
    message: "Cannot find the Casebook repository (a package.json with `workspaces`); set CASEBOOK_ROOT.",
  },
  CLI_MANIFEST_INVALID: {
    status: 400,
    message: "A system manifest (the `casebook` field of systems/<name>/package.json) is invalid.",
  },
  CLI_PORT_COLLISION: {
    status: 409,
    message: "Two systems would listen on the same port; give one another port.",
  },
  CLI_SYSTEM_EXISTS: {
    status: 409,
    message: "A system of this name exists already; `casebook new` never writes over one.",
  },
  CLI_PORT_CLAIMED: {
    status: 409,
    message: "Another system's manifest holds this port; give the new system another with --port.",
  },
  CLI_PORT_TAKEN: { status: 409, message: "A port a system needs is already taken; free it or override it." },
  CLI_SYSTEM_PLANNED: {
    status: 404,
    message: "This system is planned, not built yet; `casebook list` shows which ones run.",
  },
  CLI_ENTRY_MISSING: { status: 404, message: "The file a system's manifest points at does not exist." },
  CLI_START_FAILED: {
    status: 503,
    message: "A system did not come up; its last stderr lines are shown above.",
  },
});

export type CliErrorCode = keyof typeof cliErrors.specs;

/** The codes a retyped command line fixes (another name, another flag): exit code 2. */
const usageCodes: readonly CliErrorCode[] = [
  "CLI_USAGE",
  "CLI_SYSTEM_UNKNOWN",
  "CLI_SYSTEM_EXISTS",
  "CLI_PORT_CLAIMED",
];

/** Exit status for the shell: 2 when retyping the command fixes it, 1 otherwise. */
export function exitCodeOf(error: unknown): number {
  return usageCodes.some((code) => cliErrors.is(error, code)) ? 2 : 1;
}
