/**
 * The console's one error registry: stable codes, each with its HTTP status and a message
 * that says what to do.
 */
import { defineErrors } from "@casebook/kit/errors";

export const consoleErrors = defineErrors({
  CONSOLE_SYSTEM_NOT_FOUND: {
    status: 404,
    message: "No system by that name: GET /api/systems lists the ones the console knows.",
  },
  CONSOLE_SYSTEMS_INVALID: {
    status: 500,
    message:
      "CASEBOOK_CONSOLE_SYSTEMS is not the list `casebook up` passes; unset it to use the manifests' ports.",
  },
  CONSOLE_TEXT_NOT_FOUND: {
    status: 404,
    message: "This system has no README or no design text section to show.",
  },
  CONSOLE_SCENARIO_NOT_FOUND: {
    status: 404,
    message: "This system declares no scenario with that id: GET /api/systems/:name lists its scenarios.",
  },
  CONSOLE_SYSTEM_UNREACHABLE: {
    status: 502,
    message: "The system did not answer in time; check it runs (its state on the home page) and retry.",
  },
  CONSOLE_ADMIN_TOKEN_REQUIRED: {
    status: 401,
    message:
      "This console listens beyond loopback: send `Authorization: Bearer <CASEBOOK_CONSOLE_ADMIN_TOKEN>`.",
  },
  CONSOLE_ASSET_NOT_FOUND: { status: 404, message: "No such file in the console's built front end." },
  CONSOLE_NOT_BUILT: {
    status: 503,
    message:
      "The console's web front end is not built: run `npm start` (it builds it) or `node packages/console/src/build-web.ts`.",
  },
});
