import { useEffect, useMemo, useState } from "react";
import { Link, useParams } from "react-router-dom";
import {
  enc,
  fullHistory,
  getJson,
  sendJson,
  type AppLogs,
  type ExecutionDocument,
  type HistoryEvent,
  type WorkflowDoc,
} from "../api";
import { ConfirmDialog, ErrorBanner, JsonView, Loading, Time, useAsync } from "../components/common";
import { TaskCallback, type CallbackAnswer } from "../components/TaskCallback";
import { TriggerOrigin } from "../components/Triggers";
import { WorkflowGraph } from "../components/WorkflowGraph";
import { duration } from "../lib/format";
import { triggerOfEvent } from "../lib/triggers";
import {
  failedState,
  failureOrigin,
  grainOf,
  historyComplete,
  logLinesFor,
  withoutTags,
  nodeStatuses,
  statusLabel,
  timelineRows,
  type TimelineRow,
} from "../lib/history";

interface Loaded {
  doc: ExecutionDocument;
  events: HistoryEvent[];
}

export function ExecutionPage() {
  const { id = "" } = useParams();
  const exec = useAsync<Loaded>(async () => {
    const [doc, events] = await Promise.all([
      getJson<ExecutionDocument>(`/v1/executions/${enc(id)}`),
      fullHistory(id).catch(() => [] as HistoryEvent[]),
    ]);
    return { doc, events };
  }, [id]);
  const doc = exec.data?.doc;
  const events = useMemo(() => exec.data?.events ?? [], [exec.data]);
  const started = events.find((e) => e.type === "ExecutionStarted");
  const app = doc?.app ?? (typeof started?.app === "string" ? started.app : undefined);
  const workflow = doc?.workflow ?? (typeof started?.workflow === "string" ? started.workflow : undefined);
  // the document's, else the start event's (recorded a moment before the document has it)
  const trigger = doc?.trigger ?? triggerOfEvent(started?.trigger);
  const def = useAsync(
    () =>
      app && workflow
        ? getJson<WorkflowDoc>(`/v1/apps/${enc(app)}/workflows/${enc(workflow)}`)
        : Promise.resolve(null),
    [app, workflow],
  );
  const statuses = useMemo(() => nodeStatuses(events), [events]);
  const rows = useMemo(() => timelineRows(events), [events]);
  const failed = useMemo(() => (doc?.status === "FAILED" ? failedState(events) : null), [doc?.status, events]);
  const waiting = Object.keys(statuses).filter((state) => statuses[state] === "waiting");
  const [selected, setSelected] = useState<{ state: string; row: string | null } | null>(null);
  const [confirmStop, setConfirmStop] = useState(false);
  const [actionError, setActionError] = useState<unknown>(null);

  // A failed execution opens on the grain instance where its failure began (its traceback in
  // its logs), else on the state that failed it.
  useEffect(() => {
    if (!failed || selected !== null) return;
    const origin = failureOrigin(events) ?? failed;
    const task = [...rows]
      .reverse()
      .find((r) => r.kind === "task" && r.state === origin.state && r.path === origin.path && r.status === "failed");
    setSelected({ state: origin.state, row: task?.key ?? null });
  }, [failed, selected, events, rows]);

  // A running execution is followed every 2 s; one that ended is reloaded until its
  // history has recorded the end too (its events are written a moment after), for a minute.
  const running = doc?.status === "RUNNING";
  const complete = historyComplete(events, doc?.status, doc?.redrive_count ?? 0);
  const [catchUp, setCatchUp] = useState(0);
  const reload = exec.reload;
  const follow = doc !== undefined && (running || (!complete && catchUp < 40));
  useEffect(() => {
    if (!follow) return;
    const t = window.setInterval(() => {
      if (!running) setCatchUp((n) => n + 1);
      reload(true);
    }, running ? 2000 : 1500);
    return () => window.clearInterval(t);
  }, [follow, running, reload]);

  const stop = async () => {
    setConfirmStop(false);
    try {
      await sendJson("POST", `/v1/executions/${enc(id)}/stop`);
      exec.reload(true);
    } catch (e) {
      setActionError(e);
    }
  };
  const redrive = async () => {
    try {
      await sendJson("POST", `/v1/executions/${enc(id)}/redrive`);
      setSelected(null);
      setCatchUp(0);
      exec.reload(true);
    } catch (e) {
      setActionError(e);
    }
  };

  if (exec.loading && !exec.data) return <Loading what="the execution" />;
  if (!doc) return <ErrorBanner error={exec.error ?? "no such execution"} />;

  const selectedRow: TimelineRow | undefined = selected
    ? selected.row
      ? rows.find((r) => r.key === selected.row)
      : // a node: its failed entry if it has one, else its last state entry, else its last instance
        [...rows].reverse().find((r) => r.state === selected.state && r.status === "failed" && r.kind === "state") ??
        [...rows].reverse().find((r) => r.state === selected.state && r.kind === "state") ??
        [...rows].reverse().find((r) => r.state === selected.state)
    : undefined;
  const span = Math.max(
    1,
    ...rows.map((r) => r.offsetMs + (r.durationMs ?? (doc.finished_ms ?? Date.now()) - r.startMs)),
  );

  return (
    <div className="page">
      <div className="page-head">
        <h1 className="mono small-h">Execution {id.slice(0, 12)}…</h1>
        <span data-testid="execution-status" className={`pill pill-${doc.status.toLowerCase()}`}>
          {doc.status}
        </span>
        {doc.redrive_count && <span className="pill pill-neutral">redriven ×{doc.redrive_count}</span>}
        <span className="spacer" />
        {doc.status === "RUNNING" && (
          <button className="danger" data-testid="stop" onClick={() => setConfirmStop(true)}>
            Stop
          </button>
        )}
        {(doc.status === "FAILED" || doc.status === "ABORTED") && (
          <button className="primary" data-testid="redrive" onClick={redrive}>
            Redrive
          </button>
        )}
      </div>
      <ErrorBanner error={actionError ?? exec.error} onClose={() => setActionError(null)} />
      <div className="meta">
        <span>
          App: {app ? <Link to={`/apps/${enc(app)}`}>{app}</Link> : "—"} · workflow {workflow ?? "—"}
        </span>
        <span>
          Started: <Time ms={doc.started_ms} />
        </span>
        {trigger && <TriggerOrigin trigger={trigger} />}
        <span>Duration: {duration(doc.finished_ms && doc.started_ms ? doc.finished_ms - doc.started_ms : null)}</span>
        <span className="mono muted">{id}</span>
      </div>
      {doc.status === "RUNNING" && waiting.length > 0 && (
        <div className="banner banner-waiting" data-testid="waiting-banner">
          <span>
            Waiting for a callback: {waiting.join(", ")}. Its grain handed on a task token; the execution goes on when
            its result is sent.
          </span>
          <button className="link" onClick={() => setSelected({ state: waiting[0] ?? "", row: null })}>
            send its result…
          </button>
        </div>
      )}
      {failed && (
        <div className="banner banner-error" data-testid="failed-banner">
          <strong>{failed.state}</strong>
          {failed.path ? ` (${failed.path})` : ""} failed: <strong>{failed.error ?? doc.error}</strong>
          {(failed.cause ?? doc.cause) ? ` — ${failed.cause ?? doc.cause}` : ""}
        </div>
      )}
      <div className="split">
        <section className="card grow">
          <h2>Graph</h2>
          {def.error ? (
            <div className="note">The workflow cannot be drawn: {def.error instanceof Error ? def.error.message : String(def.error)}</div>
          ) : def.data ? (
            <WorkflowGraph
              kind={def.data.kind}
              definition={def.data.definition}
              statuses={statuses}
              selected={selected?.state ?? null}
              onSelect={(state) => setSelected({ state, row: null })}
              testId="execution-graph"
            />
          ) : (
            <Loading what="the workflow" />
          )}
          <div className="legend">
            {["succeeded", "failed", "caught", "running", "waiting", "cancelled", "not-run"].map((s) => (
              <span key={s} className={`legend-item status-${s}`}>
                <span className="swatch" /> {statusLabel(s)}
              </span>
            ))}
          </div>
        </section>
        <section className="card side">
          <h2>Input</h2>
          <JsonView value={doc.input ?? started?.input} testId="execution-input" />
          {doc.status === "FAILED" || doc.status === "ABORTED" ? (
            <>
              <h2>Error</h2>
              <div className="error-text" data-testid="execution-error">
                {doc.error ?? "—"}
              </div>
              <div className="pre" data-testid="execution-cause">
                {doc.cause ?? ""}
              </div>
            </>
          ) : (
            <>
              <h2>Output</h2>
              {doc.status === "RUNNING" ? (
                <div className="muted" data-testid="execution-output">
                  {waiting.length > 0 ? "waiting for a callback…" : "still running…"}
                </div>
              ) : (
                <JsonView value={doc.output} testId="execution-output" />
              )}
            </>
          )}
        </section>
      </div>
      {selected && (
        <StateDetails
          executionId={id}
          app={app}
          state={selected.state}
          row={selectedRow}
          grain={selectedRow?.grain ?? grainOf(events, selected.state)}
          onClose={() => setSelected(null)}
          onCallbackAnswered={() => exec.reload(true)}
        />
      )}
      <section className="card">
        <h2>Timeline</h2>
        {rows.length === 0 ? (
          <div className="empty">
            {follow ? "Waiting for the history of this execution…" : "No history was recorded for this execution."}
          </div>
        ) : (
          <div className="table-scroll">
            <table className="timeline" data-testid="timeline">
              <thead>
                <tr>
                  <th>State</th>
                  <th>Path</th>
                  <th>Host</th>
                  <th>Start</th>
                  <th>Duration</th>
                  <th>Status</th>
                  <th className="bar-col">
                    0 – {duration(span)}
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => {
                  const d = r.durationMs ?? (doc.finished_ms ?? Date.now()) - r.startMs;
                  return (
                    <tr
                      key={r.key}
                      data-testid="timeline-row"
                      className={`clickable${selected?.row === r.key ? " selected" : ""}`}
                      onClick={() => setSelected({ state: r.state, row: r.key })}
                    >
                      <td>
                        {r.kind === "redrive" ? (
                          <span data-testid="timeline-redrive">
                            ⟲ redrive{r.attempt !== null ? ` ${r.attempt}` : ""} from {r.state}
                          </span>
                        ) : (
                          <>
                            {r.kind === "task" ? <span className="muted">↳ grain </span> : null}
                            {r.kind === "task" ? r.grain : r.state}
                            {r.attempt !== null && r.attempt > 0 ? <span className="muted"> (delivery {r.attempt + 1})</span> : null}
                          </>
                        )}
                      </td>
                      <td className="mono">{r.path || "—"}</td>
                      <td className="mono">
                        {r.host ?? "—"}
                        {r.pid !== null ? ` · pid ${r.pid}` : ""}
                      </td>
                      <td>+{duration(r.offsetMs)}</td>
                      <td>{duration(r.durationMs)}</td>
                      <td>
                        <span className={`pill pill-${r.status}`}>{statusLabel(r.status)}</span>
                        {r.afterEnd ? (
                          <span className="muted small" data-testid="after-end" title="its grain was not stopped; its output was not used">
                            {" "}
                            after its run ended
                          </span>
                        ) : null}
                      </td>
                      <td className="bar-col">
                        <div className="bar-track">
                          <div
                            className={`bar status-${r.status}${r.afterEnd ? " after-end" : ""}`}
                            style={{ left: `${(r.offsetMs / span) * 100}%`, width: `${Math.max(0.5, (d / span) * 100)}%` }}
                          />
                        </div>
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {confirmStop && (
        <ConfirmDialog message="Stop this execution? It ends ABORTED; work in flight is dropped." onYes={stop} onNo={() => setConfirmStop(false)} />
      )}
    </div>
  );
}

function StateDetails({
  executionId,
  app,
  state,
  row,
  grain,
  onClose,
  onCallbackAnswered,
}: {
  executionId: string;
  app: string | undefined;
  state: string;
  row: TimelineRow | undefined;
  grain: string;
  onClose: () => void;
  /** A callback was answered: the execution is to be loaded again. */
  onCallbackAnswered: () => void;
}) {
  // kept here, not in the callback's form: the form goes once the wait has ended
  const [answer, setAnswer] = useState<CallbackAnswer | null>(null);
  useEffect(() => setAnswer(null), [state, row?.key]);
  const logs = useAsync(
    () =>
      app
        ? getJson<AppLogs>(`/v1/apps/${enc(app)}/logs?tail=2000`).then((b) =>
            logLinesFor(b.logs, executionId, grain, row ? row.path : null),
          )
        : Promise.resolve({ tagged: [], untagged: [] }),
    [app, executionId, grain, row?.path],
  );
  const untagged = logs.data?.untagged.slice(-40) ?? [];
  return (
    <section className="card details" data-testid="state-details">
      <div className="row">
        <h2>
          {state}
          {row?.path ? <span className="muted mono"> {row.path}</span> : null}
        </h2>
        {row && <span className={`pill pill-${row.status}`}>{statusLabel(row.status)}</span>}
        <span className="spacer" />
        <button className="link" onClick={onClose}>
          close
        </button>
      </div>
      {!row && <div className="muted">This state did not run in this execution.</div>}
      {row?.status === "waiting" && row.callback && (
        <TaskCallback
          wait={row.callback}
          onAnswer={(a) => {
            setAnswer(a);
            onCallbackAnswered();
          }}
        />
      )}
      {answer && (
        <div className={`banner ${answer.ok ? "banner-ok" : "banner-error"}`} role="status" data-testid="callback-answer">
          {answer.text}
        </div>
      )}
      <div className="grid2">
        <div>
          <h3>Input</h3>
          <JsonView value={row?.input} testId="state-input" />
        </div>
        <div>
          <h3>Output</h3>
          <JsonView value={row?.output} testId="state-output" />
        </div>
      </div>
      <h3>Error</h3>
      <div data-testid="state-error" className={row?.error ? "error-text pre" : "muted"}>
        {row?.error ? `${row.error}${row.cause ? `: ${row.cause}` : ""}` : "none"}
      </div>
      <h3>
        Logs of grain {grain}
        {row?.path ? <span className="muted"> in {row.path}</span> : null}
      </h3>
      <ErrorBanner error={logs.error} />
      <div data-testid="state-logs">
        <pre className="logs">
          {logs.loading && !logs.data
            ? "loading…"
            : logs.data && logs.data.tagged.length > 0
              ? logs.data.tagged.map(withoutTags).join("\n")
              : `no log lines tagged with this execution and grain${row?.path ? " in this branch or item" : ""}`}
        </pre>
        {untagged.length > 0 && (
          <>
            <div className="muted small">
              The app&apos;s latest output that names no execution (a grain&apos;s own prints): it may come from any
              execution.
            </div>
            <pre className="logs untagged">{untagged.join("\n")}</pre>
          </>
        )}
      </div>
    </section>
  );
}
