import { render } from "preact";
import "uplot/dist/uPlot.min.css";
import { App } from "./app.tsx";
import "./console.css";

render(<App />, document.getElementById("root")!);
