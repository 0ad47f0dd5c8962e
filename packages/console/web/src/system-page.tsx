import { type ClaimResult, getJson, type PlotData, type SystemDetail } from "./api.ts";
import { Plot } from "./plot.tsx";
import { Scenarios } from "./scenarios.tsx";
import { Address, HealthBadge } from "./system-badges.tsx";
import { usePolling } from "./use-polling.ts";

export function SystemPage({ name }: { name: string }) {
  const detail = usePolling(() => getJson<SystemDetail>(`/api/systems/${name}`), 5_000, `detail-${name}`);
  const plots = usePolling(
    () => getJson<{ source?: "metrics" | "window"; plots: PlotData[] }>(`/api/systems/${name}/plots`),
    2_000,
    `plots-${name}`,
  );
  const system = detail.value;
  return (
    <article aria-labelledby="system-title">
      <p>
        <a href="#/">← all systems</a>
      </p>
      <h1 id="system-title">
        {name} {system ? <HealthBadge health={system.health} /> : null}
      </h1>
      {detail.error ? (
        <p role="alert" class="error">
          {detail.error}
        </p>
      ) : null}
      {system ? <About system={system} /> : <p>Loading…</p>}
      <section aria-labelledby="plots-title">
        <h2 id="plots-title">Live metrics</h2>
        {plots.value?.source === "metrics" ? (
          <p class="muted">
            From the metrics system's query API (PromQL), which scrapes this system's <code>/metrics</code>.
          </p>
        ) : (
          <p class="muted">
            From this system's own <code>/metrics</code>, read every few seconds; the console keeps the last
            few minutes in memory.
          </p>
        )}
        {plots.value?.plots.length === 0 ? <p>This system declares no plots for the console yet.</p> : null}
        <div class="plots">
          {(plots.value?.plots ?? []).map((plot) => (
            <Plot key={plot.title} data={plot} />
          ))}
        </div>
      </section>
      {system ? <Scenarios system={name} scenarios={system.scenarios} /> : null}
      {system ? <Claims claims={system.claims} /> : null}
    </article>
  );
}

function About({ system }: { system: SystemDetail }) {
  return (
    <section aria-label="What it is">
      <p class="title">{system.title}</p>
      {system.summary ? <p class="summary">{system.summary}</p> : null}
      <Address system={system} />
      <p class="links">
        {system.links.design ? <a href={system.links.design}>the design text, {system.seed}</a> : null}
        {system.links.readme ? <a href={system.links.readme}>README</a> : null}
        <a href={system.links.docs}>API reference</a>
        <a href={system.links.metrics}>raw metrics</a>
      </p>
    </section>
  );
}

function Claims({ claims }: { claims: ClaimResult[] }) {
  return (
    <section aria-labelledby="claims-title">
      <h2 id="claims-title">Claims</h2>
      <p class="muted">
        Each claim of the design text, its test, and what that test did in the last <code>npm test</code>.
      </p>
      <div class="table-wrap">
        <table id="claims">
          <thead>
            <tr>
              <th scope="col">id</th>
              <th scope="col">claim</th>
              <th scope="col">test</th>
              <th scope="col">last run</th>
            </tr>
          </thead>
          <tbody>
            {claims.map((claim) => (
              <tr key={claim.id} data-claim={claim.id} data-status={claim.status}>
                <th scope="row">{claim.id}</th>
                <td>{claim.text}</td>
                <td>
                  {claim.tests.length === 0
                    ? "—"
                    : claim.tests.slice(0, 3).map((t) => (
                        <div key={`${t.file}:${t.name}`} class="test-name">
                          <code>{t.file}</code> {t.name}
                        </div>
                      ))}
                </td>
                <td>
                  <span class={`result result-${claim.status.replace(" ", "-")}`}>{claim.status}</span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
