import { useCallback, useEffect, useRef, useState, type ReactNode } from "react";
import { absoluteTime, pretty, relativeTime } from "../lib/format";

export function ErrorBanner({ error, onClose }: { error: unknown; onClose?: () => void }) {
  if (error === null || error === undefined) return null;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div className="banner banner-error" role="alert" data-testid="error-banner">
      <span>{message}</span>
      {onClose && (
        <button className="link" onClick={onClose} aria-label="dismiss">
          ×
        </button>
      )}
    </div>
  );
}

export function StatusPill({ status }: { status: string }) {
  return <span className={`pill pill-${status.toLowerCase()}`}>{status}</span>;
}

export function Time({ ms }: { ms: number | null | undefined }) {
  if (ms == null) return <span>—</span>;
  return (
    <span title={absoluteTime(ms)}>
      {relativeTime(ms)} <span className="muted">({absoluteTime(ms)})</span>
    </span>
  );
}

export function JsonView({ value, testId }: { value: unknown; testId?: string }) {
  const [open, setOpen] = useState(true);
  const text = pretty(value);
  const long = text.split("\n").length > 12;
  return (
    <div className="json">
      {long && (
        <button className="link small" onClick={() => setOpen(!open)}>
          {open ? "collapse" : "expand"}
        </button>
      )}
      <pre data-testid={testId} className={open ? "" : "collapsed"}>
        {text}
      </pre>
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return <div className="loading">Loading {what}…</div>;
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="empty">{children}</div>;
}

/** A confirm dialog: `confirm-yes` / `confirm-no`. */
export function ConfirmDialog({
  message,
  onYes,
  onNo,
}: {
  message: string;
  onYes: () => void;
  onNo: () => void;
}) {
  return (
    <div className="modal-back" role="dialog" aria-modal="true">
      <div className="modal" data-testid="confirm-dialog">
        <p>{message}</p>
        <div className="row right">
          <button data-testid="confirm-no" onClick={onNo}>
            Cancel
          </button>
          <button data-testid="confirm-yes" className="danger" onClick={onYes}>
            Yes
          </button>
        </div>
      </div>
    </div>
  );
}

/** Runs `load` when its dependencies change; keeps its data, error and loading flag. */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const gen = useRef(0);
  const loader = useRef(load);
  loader.current = load;
  const reload = useCallback((quiet = false) => {
    const mine = ++gen.current;
    if (!quiet) setLoading(true);
    loader
      .current()
      .then((d) => {
        if (mine !== gen.current) return;
        setData(d);
        setError(null);
      })
      .catch((e: unknown) => mine === gen.current && setError(e))
      .finally(() => mine === gen.current && setLoading(false));
  }, []);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  useEffect(() => reload(), deps);
  return { data, error, loading, reload, setError };
}
