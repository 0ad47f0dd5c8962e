import { useState } from "preact/hooks";

/**
 * The console's admin token (CASEBOOK_CONSOLE_ADMIN_TOKEN), entered once per tab: a console
 * listening beyond loopback refuses a scenario start without it (401). Kept in sessionStorage —
 * gone with the tab, never in the URL (a link, the history or a log would carry it) — and sent
 * only as `Authorization: Bearer …` on a start.
 */
const storageKey = "casebook-console-admin-token";

function stored(): string {
  try {
    return sessionStorage.getItem(storageKey) ?? "";
  } catch {
    return ""; // storage off (a privacy mode): the field still works for this page's life
  }
}

/** The token in hand (or "") and its setter, which keeps it for the tab. */
export function useAdminToken(): [string, (token: string) => void] {
  const [token, setToken] = useState(stored);
  const keep = (next: string) => {
    const trimmed = next.trim();
    try {
      if (trimmed === "") sessionStorage.removeItem(storageKey);
      else sessionStorage.setItem(storageKey, trimmed);
    } catch {
      // storage off: kept in memory only
    }
    setToken(trimmed);
  };
  return [token, keep];
}

/** The headers of a start: the token when one is kept. */
export function authorizationOf(token: string): Record<string, string> {
  return token === "" ? {} : { authorization: `Bearer ${token}` };
}

/** A labelled password field, its Keep and Forget buttons; open when `open` (after a 401). */
export function AdminTokenField({
  token,
  onKeep,
  open,
}: {
  token: string;
  onKeep: (token: string) => void;
  open: boolean;
}) {
  const [draft, setDraft] = useState("");
  return (
    <details class="admin-token" open={open || undefined}>
      <summary>Admin token {token === "" ? "(none kept)" : "(kept for this tab)"}</summary>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          onKeep(draft);
          setDraft("");
        }}
      >
        <label for="admin-token">
          The console's admin token, needed to start a scenario when the console listens beyond this machine
        </label>{" "}
        <input
          id="admin-token"
          type="password"
          autocomplete="off"
          value={draft}
          onInput={(event) => setDraft((event.target as HTMLInputElement).value)}
        />{" "}
        <button type="submit">Keep for this tab</button>{" "}
        <button type="button" onClick={() => onKeep("")} disabled={token === ""}>
          Forget
        </button>
      </form>
    </details>
  );
}
