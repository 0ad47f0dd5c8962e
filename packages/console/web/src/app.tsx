import { useEffect, useState } from "preact/hooks";
import { Home } from "./home.tsx";
import { SystemPage } from "./system-page.tsx";

/** `#/` home, `#/systems/<name>` a system's page: hash routes, so the service serves one file. */
function currentRoute(): { page: "home" } | { page: "system"; name: string } {
  const match = /^#\/systems\/([a-z0-9-]+)$/.exec(window.location.hash);
  return match ? { page: "system", name: match[1]! } : { page: "home" };
}

export function App() {
  const [route, setRoute] = useState(currentRoute());
  useEffect(() => {
    const onHash = () => {
      setRoute(currentRoute());
      window.scrollTo(0, 0);
    };
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  useEffect(() => {
    document.title = route.page === "home" ? "Casebook console" : `${route.name} · Casebook console`;
  }, [route]);
  return (
    <>
      <header class="top">
        <a class="brand" href="#/">
          Casebook console
        </a>
        <span class="tagline">each system: its state, live metrics and claims</span>
      </header>
      <main id="main">{route.page === "home" ? <Home /> : <SystemPage name={route.name} />}</main>
    </>
  );
}
