import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import type { PlotData } from "./api.ts";

/** Distinct, dark enough on white for the lines and the legend's swatches. */
const palette = [
  "#1f5fbf",
  "#c2410c",
  "#15803d",
  "#7e22ce",
  "#b91c1c",
  "#0f766e",
  "#a16207",
  "#4b5563",
  "#be185d",
];
const plotHeightPx = 220;

/**
 * One declared plot: uPlot on a canvas, titled in words with its unit, redrawn as data arrives.
 * Over time by default; over `xLabel`'s numbers (a scenario's points, drawn as dots) when given.
 */
export function Plot({ data, xLabel }: { data: PlotData; xLabel?: string }) {
  const holder = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const shape = data.lines.map((l) => l.label).join("\u0000");
  const aligned = [data.times, ...data.lines.map((l) => l.values)] as uPlot.AlignedData;

  useEffect(() => {
    const element = holder.current;
    if (element === null) return;
    const options: uPlot.Options = {
      width: Math.max(260, element.clientWidth),
      height: plotHeightPx,
      series: [
        { label: "time" },
        ...data.lines.map((line, i) => ({
          label: line.label,
          stroke: palette[i % palette.length]!,
          width: 2,
          spanGaps: false,
          ...(xLabel === undefined ? {} : { points: { show: true, size: 6 } }),
        })),
      ],
      axes: [xLabel === undefined ? {} : { label: xLabel }, { label: data.unit, size: 60 }],
      scales: { x: { time: xLabel === undefined } },
      legend: { live: false },
      cursor: { show: false },
    };
    chart.current = new uPlot(options, aligned, element);
    const resize = new ResizeObserver(() => {
      chart.current?.setSize({ width: Math.max(260, element.clientWidth), height: plotHeightPx });
    });
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.current?.destroy();
      chart.current = null;
    };
  }, [shape, data.unit, xLabel]);

  useEffect(() => {
    chart.current?.setData(aligned);
  }, [data]);

  const last = data.times.at(-1);
  const points = data.lines.reduce((n, l) => n + l.values.filter((v) => v !== null).length, 0);
  const label = `${data.title}, in ${data.unit}: ${data.lines.length} line(s) over the last ${data.times.length} ${xLabel === undefined ? "scrapes" : `values of ${xLabel}`}`;
  return (
    <figure class="plot" data-points={points} data-last-time={last ?? ""} data-lines={data.lines.length}>
      <figcaption>
        {data.title} <span class="unit">({data.unit})</span>
      </figcaption>
      <div ref={holder} role="img" aria-label={label} />
      {data.lines.length === 0 ? <p class="muted">No sample yet.</p> : null}
    </figure>
  );
}
