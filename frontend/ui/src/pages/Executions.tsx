import { useEffect, useState } from "react";
import { Link, useSearchParams } from "react-router-dom";
import { EXEC_STATUSES, enc, getJson, listApps, type ExecutionList } from "../api";
import { Empty, ErrorBanner, Loading, StatusPill, Time, useAsync } from "../components/common";
import { duration } from "../lib/format";

const SINCE: Record<string, number | null> = { "1h": 3600e3, "24h": 86400e3, "7d": 7 * 86400e3, all: null };

export function ExecutionsPage() {
  const [params, setParams] = useSearchParams();
  const app = params.get("app") ?? "";
  const status = params.get("status") ?? "";
  const since = params.get("since") ?? "24h";
  const [pages, setPages] = useState<string[]>([]); // page tokens of the pages before this one
  const page = pages[pages.length - 1] ?? null;
  const apps = useAsync(listApps, []);
  const list = useAsync(() => {
    const q = new URLSearchParams({ limit: "50" });
    if (app) q.set("app", app);
    if (status) q.set("status", status);
    const span = SINCE[since];
    if (span) q.set("since", String(Date.now() - span));
    if (page) q.set("page", page);
    return getJson<ExecutionList>(`/v1/executions?${q}`);
  }, [app, status, since, page]);

  // The page follows the cluster while some execution on it runs, and always on the first page:
  // an execution's end reaches the listing (Cassandra, through the history topic) a moment after
  // its own document, so a run that just ended may still be missing from a status filter, and
  // new runs start at the top.
  const anyRunning = (list.data?.executions ?? []).some((x) => x.status === "RUNNING");
  const follow = anyRunning || page === null;
  const reload = list.reload;
  useEffect(() => {
    if (!follow) return;
    const t = window.setInterval(() => reload(true), 5000);
    return () => window.clearInterval(t);
  }, [follow, reload]);

  const setFilter = (key: string, value: string) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    setParams(next);
    setPages([]);
  };

  return (
    <div className="page">
      <div className="page-head">
        <h1>Executions</h1>
        <span className="spacer" />
        <button onClick={() => list.reload()}>Refresh</button>
      </div>
      <div className="row wrap filters">
        <label className="inline">
          App
          <select data-testid="filter-app" value={app} onChange={(e) => setFilter("app", e.target.value)}>
            <option value="">any</option>
            {(apps.data ?? []).map((a) => (
              <option key={a.name} value={a.name}>
                {a.name}
              </option>
            ))}
            {app && !(apps.data ?? []).some((a) => a.name === app) && <option value={app}>{app}</option>}
          </select>
        </label>
        <label className="inline">
          Status
          <select data-testid="filter-status" value={status} onChange={(e) => setFilter("status", e.target.value)}>
            <option value="">any</option>
            {EXEC_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label className="inline">
          Since
          <select data-testid="filter-since" value={since} onChange={(e) => setFilter("since", e.target.value)}>
            {Object.keys(SINCE).map((s) => (
              <option key={s} value={s}>
                {s === "all" ? "all time" : `last ${s}`}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorBanner error={list.error} />
      {list.loading && !list.data ? (
        <Loading what="executions" />
      ) : list.data && list.data.executions.length === 0 ? (
        <Empty>
          No executions {app || status || since !== "all" ? "match these filters" : "yet"} — invoke an app from its page.
        </Empty>
      ) : (
        list.data && (
          <>
            <div className="table-scroll">
              <table data-testid="executions-table">
                <thead>
                  <tr>
                    <th>Status</th>
                    <th>Execution</th>
                    <th>App</th>
                    <th>Workflow</th>
                    <th>Started</th>
                    <th>Duration</th>
                    <th>Error</th>
                  </tr>
                </thead>
                <tbody>
                  {list.data.executions.map((x) => (
                    <tr key={x.execution_id} data-testid={`execution-row-${x.execution_id}`}>
                      <td>
                        <StatusPill status={x.status} />
                      </td>
                      <td className="mono">
                        <Link to={`/executions/${enc(x.execution_id)}`}>{x.execution_id.slice(0, 12)}…</Link>
                        {x.trigger ? (
                          <span
                            className="muted small"
                            data-testid="row-trigger"
                            title={`started by trigger ${x.trigger.name} (${x.trigger.kind})`}
                          >
                            {" "}
                            by {x.trigger.name}
                          </span>
                        ) : null}
                      </td>
                      <td>{x.app}</td>
                      <td>{x.workflow}</td>
                      <td>
                        <Time ms={x.started_ms} />
                      </td>
                      <td>{duration(x.finished_ms != null ? x.finished_ms - x.started_ms : null)}</td>
                      <td className="error-cell" data-testid="row-error" title={x.cause ?? undefined}>
                        {x.error ?? ""}
                        {x.cause ? <span className="muted">: {x.cause}</span> : null}
                        {x.redrive_count ? (
                          <span className="muted" title="times redriven">
                            {" "}
                            (redriven {x.redrive_count}×)
                          </span>
                        ) : null}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <div className="row pager">
              <button disabled={pages.length === 0} onClick={() => setPages(pages.slice(0, -1))}>
                ← Previous
              </button>
              <button
                data-testid="next-page"
                disabled={!list.data.next_page}
                onClick={() => list.data?.next_page && setPages([...pages, list.data.next_page])}
              >
                Next →
              </button>
            </div>
          </>
        )
      )}
    </div>
  );
}
