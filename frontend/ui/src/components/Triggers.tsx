// An app's triggers (issue 23, decision 0034) on its page: its schedules and topic triggers,
// each with its state and a Pause / Resume button; and, on an execution's page, the trigger
// that started it.
import { useEffect, useRef, useState } from "react";
import { Link } from "react-router-dom";
import { enc, listTriggers, type ExecutionTrigger, type Trigger } from "../api";
import { absoluteTime, localTime, relativeTime } from "../lib/format";
import { instantMs, lagText, toggleTrigger, triggerSpec, withTrigger } from "../lib/triggers";
import { ErrorBanner, Loading, useAsync } from "./common";

/** How often the section asks again while the app has triggers: next firings pass, lags move. */
const REFRESH_MS = 30_000;

/** The app's triggers, loaded from `GET /v1/apps/{app}/triggers`, refreshed every 30 s
 * (and on demand); a Pause / Resume shows the server's answer for that trigger at once. */
export function TriggersSection({ app }: { app: string }) {
  // each answer carries when it was asked: one asked before a pause was answered is stale
  const list = useAsync(async () => {
    const askedMs = Date.now();
    return { askedMs, triggers: await listTriggers(app) };
  }, [app]);
  const [shown, setShown] = useState<Trigger[] | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  const changedMs = useRef(0);

  useEffect(() => {
    if (list.data && list.data.askedMs >= changedMs.current) setShown(list.data.triggers);
  }, [list.data]);
  useEffect(() => {
    setShown(null);
    setActionError(null);
  }, [app]);

  const reload = list.reload;
  const any = (shown?.length ?? 0) > 0;
  useEffect(() => {
    if (!any) return;
    const t = window.setInterval(() => reload(true), REFRESH_MS);
    return () => window.clearInterval(t);
  }, [any, reload]);

  const toggle = async (trigger: Trigger) => {
    setActionError(null);
    setBusy(trigger.name);
    try {
      const updated = await toggleTrigger(app, trigger);
      changedMs.current = Date.now();
      setShown((current) => withTrigger(current ?? [], updated));
    } catch (e) {
      setActionError(e);
    } finally {
      setBusy(null);
    }
  };

  return (
    <TriggersView
      triggers={shown}
      loadError={list.error}
      actionError={actionError}
      busy={busy}
      onToggle={toggle}
      onRefresh={() => reload(true)}
      onDismiss={() => setActionError(null)}
    />
  );
}

/** The section as drawn, from what it holds (no state of its own): `triggers` null while
 * loading; the hint when there are none; the load's and the last change's errors inline. */
export function TriggersView({
  triggers,
  loadError,
  actionError,
  busy,
  onToggle,
  onRefresh,
  onDismiss,
}: {
  triggers: readonly Trigger[] | null;
  loadError: unknown;
  actionError: unknown;
  busy: string | null;
  onToggle: (trigger: Trigger) => void;
  onRefresh: () => void;
  onDismiss: () => void;
}) {
  return (
    <section className="card" data-testid="triggers">
      <div className="row">
        <h2>Triggers</h2>
        <span className="spacer" />
        <button className="link" data-testid="triggers-refresh" onClick={onRefresh}>
          refresh
        </button>
      </div>
      <ErrorBanner error={loadError} />
      <ErrorBanner error={actionError} onClose={onDismiss} />
      {triggers === null ? (
        loadError ? null : <Loading what="the triggers" />
      ) : triggers.length === 0 ? (
        <TriggersHint />
      ) : (
        <TriggerTable triggers={triggers} busy={busy} onToggle={onToggle} />
      )}
    </section>
  );
}

/** One row per trigger; `onToggle` is called with the trigger whose button was pressed, and
 * `busy` names the trigger whose change is under way (its button waits). Keeps no state. */
export function TriggerTable({
  triggers,
  busy,
  onToggle,
}: {
  triggers: readonly Trigger[];
  busy: string | null;
  onToggle: (trigger: Trigger) => void;
}) {
  return (
    <div className="table-scroll">
      <table className="triggers-table" data-testid="triggers-table">
        <thead>
          <tr>
            <th>Name</th>
            <th>Kind</th>
            <th>Schedule / topic</th>
            <th>Workflow</th>
            <th>State</th>
            <th>Next firing / lag</th>
            <th>Last firing</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {triggers.map((t) => (
            <TriggerRow key={t.name} trigger={t} busy={busy === t.name} onToggle={onToggle} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function TriggerRow({
  trigger: t,
  busy,
  onToggle,
}: {
  trigger: Trigger;
  busy: boolean;
  onToggle: (trigger: Trigger) => void;
}) {
  const pausedMs = instantMs(t.paused_at);
  return (
    <tr data-testid={`trigger-row-${t.name}`}>
      <td className="mono" data-testid="trigger-name">
        {t.name}
      </td>
      <td data-testid="trigger-kind">{t.kind}</td>
      <td className="mono" data-testid="trigger-spec">
        {triggerSpec(t)}
      </td>
      <td data-testid="trigger-workflow">{t.workflow}</td>
      <td>
        <span
          className={`pill ${t.paused ? "pill-paused" : "pill-active"}`}
          data-testid="trigger-state"
          title={t.paused && pausedMs !== null ? `paused ${absoluteTime(pausedMs)}` : undefined}
        >
          {t.paused ? "Paused" : "Active"}
        </span>
      </td>
      <td data-testid="trigger-next">
        {t.kind === "topic" ? (
          lagText(t.lag)
        ) : t.paused ? (
          <span className="muted">— (paused)</span>
        ) : (
          <Instant iso={t.next_firing} relative="below" />
        )}
      </td>
      <td data-testid="trigger-last">
        <LastFiring trigger={t} />
      </td>
      <td>
        <button className={t.paused ? "primary" : ""} data-testid="trigger-toggle" disabled={busy} onClick={() => onToggle(t)}>
          {busy ? (t.paused ? "Resuming…" : "Pausing…") : t.paused ? "Resume" : "Pause"}
        </button>
      </td>
    </tr>
  );
}

/** A schedule's last firing, linked to the execution it started; a topic trigger's record
 * executions are many and unnamed: its lag says how it keeps up instead. */
function LastFiring({ trigger }: { trigger: Trigger }) {
  if (trigger.kind === "topic") return <span className="muted">—</span>;
  const last = trigger.last_firing;
  if (!last) return <span className="muted">never</span>;
  const when = <Instant iso={last.time} relative="below" />;
  return last.execution_id ? <Link to={`/executions/${enc(last.execution_id)}`}>{when}</Link> : when;
}

/** What an app without triggers shows: how to declare them. */
export function TriggersHint() {
  return (
    <div className="note" data-testid="triggers-empty">
      No triggers. To start executions on a schedule or from each record of a Kafka topic, declare them under{" "}
      <code>triggers:</code> in app.yaml, e.g.
      <pre className="source">
        {'triggers:\n  nightly: {schedule: "cron(0 3 * * 1-5)", timezone: Europe/Paris, workflow: main}\n  orders: {topic: orders}'}
      </pre>
    </div>
  );
}

/** An instant of the API (ISO-8601, UTC): in the browser's zone, its UTC in the tooltip, and
 * how far it is from now after it (`"inline"`), on a line of its own (`"below"`), or not. */
export function Instant({
  iso,
  relative = "inline",
}: {
  iso: string | null | undefined;
  relative?: "inline" | "below" | "none";
}) {
  const ms = instantMs(iso);
  if (ms === null) return <span className="muted">—</span>;
  const local = <span title={absoluteTime(ms)}>{localTime(ms)}</span>;
  if (relative === "none") return local;
  if (relative === "below") {
    return (
      <>
        {local}
        <div className="muted small">{relativeTime(ms)}</div>
      </>
    );
  }
  return (
    <span>
      {local} <span className="muted">({relativeTime(ms)})</span>
    </span>
  );
}

/** The execution page's word on the trigger that started it: "Started by trigger nightly
 * (schedule, <firing time>)" or "(topic orders, partition 0, offset 17)". */
export function TriggerOrigin({ trigger }: { trigger: ExecutionTrigger }) {
  return (
    <span data-testid="execution-trigger">
      Started by trigger <strong>{trigger.name}</strong> (
      {trigger.kind === "topic" ? (
        `topic ${trigger.topic}, partition ${trigger.partition}, offset ${trigger.offset}`
      ) : (
        <>
          schedule{trigger.time ? ", " : ""}
          {trigger.time ? <Instant iso={trigger.time} relative="none" /> : null}
        </>
      )}
      )
    </span>
  );
}
