import { getJson, type SystemSummary } from "./api.ts";
import { Address, HealthBadge } from "./system-badges.tsx";
import { usePolling } from "./use-polling.ts";

interface SystemsAnswer {
  systems: SystemSummary[];
  problems: string[];
  testReport: { writtenAt: string | null };
}

export function Home() {
  const { value, error } = usePolling(() => getJson<SystemsAnswer>("/api/systems"), 3_000, "home");
  return (
    <section aria-labelledby="home-title">
      <h1 id="home-title">Systems</h1>
      <p class="lead">
        Each system's state comes from its <code>/readyz</code>; open one for live plots of its own metrics
        and its claims.{" "}
        {value?.testReport.writtenAt
          ? `Claims from the test run of ${value.testReport.writtenAt}.`
          : "No test run recorded yet: `npm test` writes one."}
      </p>
      {error ? (
        <p role="alert" class="error">
          Cannot reach the console's API: {error}
        </p>
      ) : null}
      {value === undefined ? <p>Loading…</p> : <SystemList systems={value.systems} />}
      {value?.problems.length ? (
        <details class="problems">
          <summary>{value.problems.length} console declaration problem(s)</summary>
          <ul>
            {value.problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        </details>
      ) : null}
    </section>
  );
}

function SystemList({ systems }: { systems: SystemSummary[] }) {
  return (
    <ul class="cards" id="systems">
      {systems.map((system) => (
        <li class="card" key={system.name} data-system={system.name}>
          <h2>
            <a href={system.links.page}>{system.name}</a> <HealthBadge health={system.health} />
          </h2>
          <p class="title">
            {system.title} <span class="muted">({system.status})</span>
          </p>
          {system.summary ? <p class="summary">{firstSentence(system.summary)}</p> : null}
          <Address system={system} />
          <p class="links">
            {system.links.readme ? <a href={system.links.readme}>README</a> : null}
            <a href={system.links.docs}>API docs</a>
            {system.links.design ? <a href={system.links.design}>design text ({system.seed})</a> : null}
          </p>
          <p class="claims-count">
            {system.claimCounts.total} claims: {system.claimCounts.pass} pass, {system.claimCounts.fail} fail,{" "}
            {system.claimCounts.notRun + system.claimCounts.skipped} not run or skipped
          </p>
        </li>
      ))}
    </ul>
  );
}

function firstSentence(text: string): string {
  const end = text.search(/[.;](\s|$)/);
  return end < 0 ? text : `${text.slice(0, end)}.`;
}
