import { useEffect, useState } from "preact/hooks";

/**
 * `load()` now and every `intervalMs` while mounted, one call at a time; the last good value
 * stays on screen through a failed call, with the error beside it.
 */
export function usePolling<T>(load: () => Promise<T>, intervalMs: number, key: string) {
  const [value, setValue] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const next = await load();
        if (stopped) return;
        setValue(next);
        setError(undefined);
      } catch (caught) {
        if (!stopped) setError((caught as Error).message);
      }
      if (!stopped) timer = setTimeout(tick, intervalMs);
    };
    setValue(undefined);
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [key]);
  return { value, error };
}
