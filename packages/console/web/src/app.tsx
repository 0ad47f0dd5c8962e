export function App() {
  return <h1>Casebook console</h1>;
}
