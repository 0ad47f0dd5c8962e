/**
 * The bench's named workload, "node-exporter-like": a seeded generator of the series a fleet of
 * hosts running node-exporter (plus one HTTP histogram per host) produces, so every side of the
 * bench stores byte-for-byte the same samples. Each host has 100 series:
 *
 * - 52 counters: `node_cpu_seconds_total` (4 cpus × 8 modes, 0.01 s steps as USER_HZ gives),
 *   network bytes and packets (2 devices), disk bytes, operations and io time (2 devices),
 *   context switches and interrupts — each grows by a noisy rate, and a host "reboots" now and
 *   then (about once in `rebootEveryScrapes` scrapes): every counter restarts near 0;
 * - 24 gauges: memory (4 KiB pages wandering), load averages (2 decimals, mean-reverting),
 *   filesystems (free space shrinking in 4 KiB steps, sizes constant), processes,
 *   `node_time_seconds` and `scrape_duration_seconds` (full-precision floats: the worst case for
 *   XOR compression, as in real scrapes), `up`, `node_boot_time_seconds`;
 * - 24 histogram series: `http_request_duration_seconds` for 2 handlers, 10 `le` buckets,
 *   `_sum` and `_count`, a few dozen log-normal observations per scrape.
 *
 * A host is scraped every `intervalMs` at its own offset in the interval (Prometheus spreads
 * targets so), every series of one scrape sharing that scrape's timestamp, ±2 ms jitter.
 * Scrapes must be asked for in order per host (`scrape(host, k)` with k = 0, 1, 2, …): the
 * state (counter totals, gauge walks) moves forward one scrape at a time.
 *
 * @example
 * const w = new NodeExporterWorkload({ hosts: 20, scrapes: 960, intervalMs: 15_000, endMs, seed: 1 });
 * w.seriesPerHost;                 // 100
 * const { t, values } = w.scrape(0, 0);  // host 0's first scrape: one value per series
 * w.labels[0][0];                  // [["__name__","node_cpu_seconds_total"],["cpu","0"],…]
 */
import { type RandomSource, seededRandom } from "@casebook/kit/random";
import { type Labels, labelsFromRecord } from "../src/domain/labels.ts";

export const WORKLOAD_NAME = "node-exporter-like";

export interface WorkloadShape {
  readonly hosts: number;
  /** Scrapes per host: the data spans `scrapes × intervalMs`. */
  readonly scrapes: number;
  readonly intervalMs: number;
  /** The last scrape's time (Unix ms) — the data ends here. */
  readonly endMs: number;
  readonly seed: number;
  /** A host reboots (its counters reset) about once in this many scrapes. Default 2,000 (≈ 8 h at 15 s). */
  readonly rebootEveryScrapes?: number;
}

type SeriesKind =
  | { kind: "counter"; meanStep: number; decimals: number; spread: number }
  | { kind: "walk"; start: number; step: number; min: number; max: number; quantum: number }
  | { kind: "revert"; mean: number; pull: number; noise: number; decimals: number }
  | { kind: "shrink"; start: number; quantum: number }
  | { kind: "constant"; value: number }
  | { kind: "noise"; mean: number; spread: number }
  | { kind: "time" }
  | { kind: "boot" }
  | { kind: "bucket"; handler: number; le: number }
  | { kind: "hist-sum"; handler: number }
  | { kind: "hist-count"; handler: number };

interface SeriesSpec {
  readonly labels: Record<string, string>;
  readonly model: SeriesKind;
}

const CPU_MODES: ReadonlyArray<[string, number]> = [
  ["idle", 0.62],
  ["user", 0.2],
  ["system", 0.08],
  ["iowait", 0.04],
  ["irq", 0.005],
  ["softirq", 0.02],
  ["steal", 0.01],
  ["nice", 0.005],
];
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, Number.POSITIVE_INFINITY];
const HANDLERS = ["/api/orders", "/metrics"];
const GIB = 1024 ** 3;
const DEFAULT_REBOOT_EVERY_SCRAPES = 2_000;

/** The 100 series of one host, in a fixed order (the generator's state follows it). */
function hostSeries(intervalS: number): SeriesSpec[] {
  const specs: SeriesSpec[] = [];
  const counter = (labels: Record<string, string>, perS: number, decimals: number, spread = 0.3) =>
    specs.push({ labels, model: { kind: "counter", meanStep: perS * intervalS, decimals, spread } });
  for (let cpu = 0; cpu < 4; cpu++) {
    for (const [mode, share] of CPU_MODES) {
      counter({ __name__: "node_cpu_seconds_total", cpu: String(cpu), mode }, share, 2);
    }
  }
  for (const device of ["eth0", "lo"]) {
    const scale = device === "eth0" ? 1 : 0.1;
    counter({ __name__: "node_network_receive_bytes_total", device }, 250_000 * scale, 0, 0.8);
    counter({ __name__: "node_network_transmit_bytes_total", device }, 120_000 * scale, 0, 0.8);
    counter({ __name__: "node_network_receive_packets_total", device }, 300 * scale, 0, 0.5);
    counter({ __name__: "node_network_transmit_packets_total", device }, 200 * scale, 0, 0.5);
  }
  for (const device of ["sda", "sdb"]) {
    counter({ __name__: "node_disk_read_bytes_total", device }, 400_000, -3, 0.9);
    counter({ __name__: "node_disk_written_bytes_total", device }, 900_000, -3, 0.9);
    counter({ __name__: "node_disk_reads_completed_total", device }, 40, 0, 0.6);
    counter({ __name__: "node_disk_writes_completed_total", device }, 90, 0, 0.6);
    counter({ __name__: "node_disk_io_time_seconds_total", device }, 0.05, 3, 0.5);
  }
  counter({ __name__: "node_context_switches_total" }, 4_000, 0, 0.2);
  counter({ __name__: "node_intr_total" }, 2_500, 0, 0.2);
  const gauge = (labels: Record<string, string>, model: SeriesKind) => specs.push({ labels, model });
  const memory = (name: string, start: number) =>
    gauge(
      { __name__: name },
      { kind: "walk", start, step: 8 * 4096, min: 0.5 * GIB, max: 15 * GIB, quantum: 4096 },
    );
  gauge({ __name__: "node_memory_MemTotal_bytes" }, { kind: "constant", value: 16 * GIB });
  memory("node_memory_MemAvailable_bytes", 9 * GIB);
  memory("node_memory_MemFree_bytes", 3 * GIB);
  memory("node_memory_Cached_bytes", 5 * GIB);
  memory("node_memory_Buffers_bytes", 0.6 * GIB);
  for (const [name, pull] of [
    ["node_load1", 0.3],
    ["node_load5", 0.1],
    ["node_load15", 0.04],
  ] as const) {
    gauge({ __name__: name }, { kind: "revert", mean: 1.2, pull, noise: 0.25, decimals: 2 });
  }
  for (const [mountpoint, device, size] of [
    ["/", "/dev/sda1", 50 * GIB],
    ["/var", "/dev/sda2", 200 * GIB],
    ["/home", "/dev/sdb1", 500 * GIB],
  ] as const) {
    const labels = { device, fstype: "ext4", mountpoint };
    gauge({ __name__: "node_filesystem_size_bytes", ...labels }, { kind: "constant", value: size });
    gauge(
      { __name__: "node_filesystem_avail_bytes", ...labels },
      { kind: "shrink", start: size * 0.4, quantum: 4096 },
    );
    gauge(
      { __name__: "node_filesystem_free_bytes", ...labels },
      { kind: "shrink", start: size * 0.45, quantum: 4096 },
    );
  }
  gauge({ __name__: "node_procs_running" }, { kind: "revert", mean: 3, pull: 0.5, noise: 1.5, decimals: 0 });
  gauge(
    { __name__: "node_procs_blocked" },
    { kind: "revert", mean: 0.3, pull: 0.5, noise: 0.6, decimals: 0 },
  );
  gauge({ __name__: "node_time_seconds" }, { kind: "time" });
  gauge({ __name__: "node_boot_time_seconds" }, { kind: "boot" });
  gauge({ __name__: "up" }, { kind: "constant", value: 1 });
  gauge({ __name__: "scrape_duration_seconds" }, { kind: "noise", mean: 0.012, spread: 0.004 });
  gauge({ __name__: "scrape_samples_scraped" }, { kind: "constant", value: 100 });
  for (let handler = 0; handler < HANDLERS.length; handler++) {
    const base = { handler: HANDLERS[handler]! };
    for (const le of BUCKETS) {
      const leText = le === Number.POSITIVE_INFINITY ? "+Inf" : String(le);
      gauge(
        { __name__: "http_request_duration_seconds_bucket", ...base, le: leText },
        { kind: "bucket", handler, le },
      );
    }
    gauge({ __name__: "http_request_duration_seconds_sum", ...base }, { kind: "hist-sum", handler });
    gauge({ __name__: "http_request_duration_seconds_count", ...base }, { kind: "hist-count", handler });
  }
  return specs;
}

/** A standard normal draw (Box–Muller). */
function normal(rng: RandomSource): number {
  const u = Math.max(rng.next(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.next());
}

function roundTo(value: number, decimals: number): number {
  const scale = 10 ** decimals;
  return Math.round(value * scale) / scale;
}

interface HostState {
  readonly rng: RandomSource;
  readonly values: Float64Array;
  readonly offsetMs: number;
  bootS: number;
  next: number;
  /** Per handler: cumulative bucket counts, sum, count. */
  readonly histograms: Array<{ buckets: number[]; sum: number; count: number }>;
}

export class NodeExporterWorkload {
  readonly shape: WorkloadShape;
  /** labels[host][series]: sorted label sets, `instance` and `job` included. */
  readonly labels: Labels[][];
  readonly #specs: SeriesSpec[];
  readonly #hosts: HostState[];

  constructor(shape: WorkloadShape) {
    this.shape = shape;
    this.#specs = hostSeries(shape.intervalMs / 1000);
    this.labels = [];
    this.#hosts = [];
    const startMs = this.startMs;
    for (let host = 0; host < shape.hosts; host++) {
      const instance = `host-${String(host).padStart(4, "0")}:9100`;
      this.labels.push(this.#specs.map((s) => labelsFromRecord({ ...s.labels, instance, job: "node" })));
      const rng = seededRandom(`${shape.seed}/${host}`);
      this.#hosts.push({
        rng,
        values: new Float64Array(this.#specs.length),
        offsetMs: Math.floor(rng.next() * shape.intervalMs),
        bootS: Math.floor(startMs / 1000) - 86_400 - Math.floor(rng.next() * 86_400 * 30),
        next: 0,
        histograms: HANDLERS.map(() => ({ buckets: BUCKETS.map(() => 0), sum: 0, count: 0 })),
      });
    }
    for (const state of this.#hosts) this.#initialise(state);
  }

  get seriesPerHost(): number {
    return this.#specs.length;
  }

  get seriesCount(): number {
    return this.shape.hosts * this.#specs.length;
  }

  get sampleCount(): number {
    return this.seriesCount * this.shape.scrapes;
  }

  /** The first scrape's nominal time (before each host's offset). */
  get startMs(): number {
    return this.shape.endMs - this.shape.intervalMs * this.shape.scrapes;
  }

  /** Host `host`'s scrape `k` (k counts from 0 and must be the host's next): its time and values. */
  scrape(host: number, k: number): { t: number; values: Float64Array } {
    const state = this.#hosts[host]!;
    if (k !== state.next) throw new RangeError(`host ${host}: scrape ${k} asked, ${state.next} is next`);
    state.next++;
    const jitter = Math.floor(state.rng.next() * 5) - 2;
    const t = this.startMs + k * this.shape.intervalMs + state.offsetMs + jitter;
    const every = this.shape.rebootEveryScrapes ?? DEFAULT_REBOOT_EVERY_SCRAPES;
    const reboot = k > 0 && state.rng.next() < 1 / every;
    if (reboot) state.bootS = Math.floor(t / 1000) - 30;
    this.#step(state, t, reboot);
    return { t, values: state.values };
  }

  #initialise(state: HostState): void {
    this.#specs.forEach((spec, i) => {
      const m = spec.model;
      const uptimeScrapes = 1_000 + state.rng.next() * 100_000;
      if (m.kind === "counter")
        state.values[i] = roundTo(m.meanStep * uptimeScrapes, Math.max(0, m.decimals));
      else if (m.kind === "walk") state.values[i] = Math.round(m.start / m.quantum) * m.quantum;
      else if (m.kind === "revert") state.values[i] = m.mean;
      else if (m.kind === "shrink") state.values[i] = Math.round(m.start / m.quantum) * m.quantum;
      else if (m.kind === "constant") state.values[i] = m.value;
    });
  }

  /** Moves every series of the host one scrape forward. */
  #step(state: HostState, t: number, reboot: boolean): void {
    const { rng, values } = state;
    for (const [handler, histogram] of state.histograms.entries()) {
      if (reboot) {
        histogram.buckets.fill(0);
        histogram.sum = 0;
        histogram.count = 0;
      }
      const requests = Math.floor(rng.next() * (handler === 0 ? 60 : 2) + (handler === 0 ? 20 : 0));
      for (let r = 0; r < requests; r++) {
        const seconds = Math.exp(Math.log(0.04) + 0.9 * normal(rng));
        histogram.sum += seconds;
        histogram.count++;
        for (let b = 0; b < BUCKETS.length; b++) if (seconds <= BUCKETS[b]!) histogram.buckets[b]!++;
      }
    }
    this.#specs.forEach((spec, i) => {
      const m = spec.model;
      switch (m.kind) {
        case "counter": {
          const step = Math.max(0, m.meanStep * (1 + m.spread * normal(rng)));
          const base = reboot ? 0 : values[i]!;
          values[i] = roundTo(base + step, m.decimals);
          break;
        }
        case "walk": {
          const next = values[i]! + Math.round((normal(rng) * m.step) / m.quantum) * m.quantum;
          values[i] = Math.min(m.max, Math.max(m.min, next));
          break;
        }
        case "revert":
          values[i] = Math.max(
            0,
            roundTo(values[i]! + m.pull * (m.mean - values[i]!) + m.noise * normal(rng) * m.pull, m.decimals),
          );
          break;
        case "shrink":
          if (rng.next() < 0.3)
            values[i] = Math.max(0, values[i]! - m.quantum * (1 + Math.floor(rng.next() * 64)));
          break;
        case "noise":
          values[i] = Math.max(0, m.mean + m.spread * normal(rng));
          break;
        case "time":
          values[i] = (t + rng.next()) / 1000;
          break;
        case "boot":
          values[i] = state.bootS;
          break;
        case "bucket":
          values[i] = state.histograms[m.handler]!.buckets[BUCKETS.indexOf(m.le)]!;
          break;
        case "hist-sum":
          values[i] = state.histograms[m.handler]!.sum;
          break;
        case "hist-count":
          values[i] = state.histograms[m.handler]!.count;
          break;
        case "constant":
          break;
      }
    });
  }
}
