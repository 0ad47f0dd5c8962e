import { useEffect, useState } from "preact/hooks";
import { AdminTokenField, authorizationOf, useAdminToken } from "./admin-token.tsx";
import type { PlotData, ScenarioInfo, ScenarioRun } from "./api.ts";
import { Plot } from "./plot.tsx";

const pollMs = 500;
/**
 * Polls in a row that may fail (a system busy past the console's 5 s bound, a 502) before the
 * page stops following the run: one slow answer on a loaded machine must not end the live view.
 */
const pollFailuresMax = 20;

/** A button per declared scenario; the run's progress, its points plotted as they come, its result. */
export function Scenarios({ system, scenarios }: { system: string; scenarios: ScenarioInfo[] }) {
  const [active, setActive] = useState<{ id: string; runId: string } | undefined>();
  const [run, setRun] = useState<ScenarioRun | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [token, keepToken] = useAdminToken();
  const [tokenAsked, setTokenAsked] = useState(false);
  const base = `/api/systems/${system}/scenarios`;

  useEffect(() => {
    if (active === undefined) return;
    let stopped = false;
    let failures = 0;
    const tick = async () => {
      try {
        const response = await fetch(`${base}/${active.id}/runs/${active.runId}`, {
          signal: AbortSignal.timeout(5_000),
        });
        const body = (await response.json()) as ScenarioRun & { detail?: string };
        if (stopped) return;
        if (!response.ok) throw new Error(body.detail ?? `answered ${response.status}`);
        failures = 0;
        setError(undefined);
        setRun(body);
        if (body.state === "running") setTimeout(tick, pollMs);
      } catch (e) {
        if (stopped) return;
        failures += 1;
        const message = (e as Error).message;
        if (failures >= pollFailuresMax) {
          setError(`${message} (stopped following the run after ${failures} failed reads)`);
          return;
        }
        setError(`${message}; trying again`);
        setTimeout(tick, pollMs * 2);
      }
    };
    void tick();
    return () => {
      stopped = true;
    };
  }, [active?.runId]);

  const start = async (id: string) => {
    setError(undefined);
    setRun(undefined);
    const response = await fetch(`${base}/${id}/runs`, { method: "POST", headers: authorizationOf(token) });
    const body = (await response.json()) as { runId?: string; detail?: string };
    if (response.status === 401) {
      setTokenAsked(true);
      setError(`${body.detail ?? "An admin token is needed."} Enter it under "Admin token" and run again.`);
      return;
    }
    if (!response.ok || body.runId === undefined) {
      setError(body.detail ?? `answered ${response.status}`);
      return;
    }
    setActive({ id, runId: body.runId });
  };

  const running = run?.state === "running";
  return (
    <section aria-labelledby="scenarios-title">
      <h2 id="scenarios-title">Scenarios</h2>
      {scenarios.length === 0 ? (
        <p>This system declares no scenario yet.</p>
      ) : (
        <p class="muted">The design text's own experiments, run against this live system, one at a time.</p>
      )}
      {scenarios.length === 0 ? null : <AdminTokenField token={token} onKeep={keepToken} open={tokenAsked} />}
      <ul class="scenarios">
        {scenarios.map((s) => (
          <li key={s.id}>
            <button type="button" data-scenario={s.id} disabled={running} onClick={() => void start(s.id)}>
              Run: {s.title}
            </button>{" "}
            <span class="muted">{s.line}</span>
          </li>
        ))}
      </ul>
      {error ? (
        <p role="alert" class="error">
          {error}
        </p>
      ) : null}
      {run ? <RunView run={run} /> : null}
    </section>
  );
}

function RunView({ run }: { run: ScenarioRun }) {
  const percent = Math.round(run.progress * 100);
  return (
    <div class="scenario-run" data-scenario={run.scenario} data-state={run.state}>
      <label>
        {run.scenario}: {run.state}{" "}
        <progress max={100} value={percent} aria-label={`progress of ${run.scenario}`}>
          {percent} %
        </progress>{" "}
        {percent} %
      </label>
      <Plot data={plotOf(run)} xLabel={run.xLabel} />
      {run.result ? (
        <p class="scenario-result" role="status">
          {run.result}
        </p>
      ) : null}
      {run.error ? (
        <p class="error" role="alert">
          {run.error}
        </p>
      ) : null}
    </div>
  );
}

/** The run's points as the Plot's aligned data: one x per distinct x, one line per series. */
function plotOf(run: ScenarioRun): PlotData {
  const xs = [...new Set(run.points.map((p) => p.x))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const series = [...new Set(run.points.map((p) => p.series))];
  const lines = series.map((label) => {
    const values: (number | null)[] = xs.map(() => null);
    for (const p of run.points) if (p.series === label) values[at.get(p.x)!] = p.y;
    return { label, values };
  });
  return { title: `${run.scenario}, as it runs`, unit: run.yLabel, times: xs, lines };
}
