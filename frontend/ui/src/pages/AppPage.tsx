import { useEffect, useState } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { enc, getJson, request, type AppMetadata, type WorkflowDoc } from "../api";
import { invokeErrorText } from "../lib/errors";
import { ConfirmDialog, ErrorBanner, JsonView, Loading, useAsync } from "../components/common";
import { TriggersSection } from "../components/Triggers";
import { WorkflowGraph } from "../components/WorkflowGraph";

interface InvokeOutcome {
  status: number;
  body: unknown;
  executionId: string | null;
}

export function AppPage() {
  const { name = "" } = useParams();
  const navigate = useNavigate();
  const app = useAsync(() => getJson<AppMetadata>(`/v1/apps/${enc(name)}`), [name]);
  const [workflow, setWorkflow] = useState<string | null>(null);
  const workflows = Object.keys(app.data?.workflows ?? {});
  const wf = workflow ?? app.data?.default_workflow ?? workflows[0] ?? null;
  const def = useAsync(
    () => (wf ? getJson<WorkflowDoc>(`/v1/apps/${enc(name)}/workflows/${enc(wf)}`) : Promise.resolve(null)),
    [name, wf],
  );
  const [confirming, setConfirming] = useState(false);
  const [actionError, setActionError] = useState<unknown>(null);
  const [input, setInput] = useState('{\n  "name": "world"\n}');
  const [mode, setMode] = useState<"sync" | "async">("sync");
  const [invokeError, setInvokeError] = useState<string | null>(null);
  const [invoking, setInvoking] = useState(false);
  const [outcome, setOutcome] = useState<InvokeOutcome | null>(null);
  const [showSource, setShowSource] = useState(false);

  useEffect(() => setWorkflow(null), [name]);

  const undeploy = async () => {
    setConfirming(false);
    try {
      await request("DELETE", `/v1/apps/${enc(name)}`);
      navigate("/apps");
    } catch (e) {
      setActionError(e);
    }
  };

  const invoke = async () => {
    setInvokeError(null);
    setOutcome(null);
    let body: string;
    try {
      body = JSON.stringify(JSON.parse(input));
    } catch (e) {
      setInvokeError(`the input is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    setInvoking(true);
    const q = `mode=${mode}${wf ? `&workflow=${enc(wf)}` : ""}`;
    try {
      const res = await request("POST", `/v1/apps/${enc(name)}/invoke?${q}`, body, {
        "Content-Type": "application/json",
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* not JSON: show the text */
      }
      const id =
        res.headers.get("X-Sand-Execution-Id") ??
        (typeof parsed === "object" && parsed !== null && "execution_id" in parsed
          ? String((parsed as { execution_id: unknown }).execution_id)
          : null);
      setOutcome({ status: res.status, body: parsed, executionId: id });
    } catch (e) {
      setInvokeError(invokeErrorText(e));
    } finally {
      setInvoking(false);
    }
  };

  if (app.loading && !app.data) return <Loading what={name} />;
  if (!app.data) {
    return (
      <div className="page">
        <ErrorBanner error={app.error ?? "no such application"} />
        <Link to="/apps">Back to the applications</Link>
      </div>
    );
  }
  const a = app.data;
  return (
    <div className="page">
      <div className="page-head">
        <h1 data-testid="app-title">{a.name}</h1>
        <span className="pill pill-neutral">v{a.version ?? "?"}</span>
        <span className="pill pill-neutral">{a.backend ?? "?"}</span>
        <span className="spacer" />
        <Link className="button" to={`/executions?app=${enc(name)}`}>
          Executions
        </Link>
        <button className="danger" data-testid="undeploy" onClick={() => setConfirming(true)}>
          Undeploy
        </button>
      </div>
      <ErrorBanner error={actionError} onClose={() => setActionError(null)} />
      <div className="meta">
        <span>Grains: {(a.grains ?? []).join(", ") || "—"}</span>
        <span>Hosts: {a.placement?.hosts?.join(", ") || "—"}</span>
        {a.owner && <span>Owner: {a.owner}</span>}
        {a.deployed_at && <span>Deployed: {a.deployed_at}</span>}
      </div>
      <div className="split">
        <section className="card grow">
          <div className="row">
            <h2>Workflow</h2>
            <select data-testid="workflow-select" value={wf ?? ""} onChange={(e) => setWorkflow(e.target.value)}>
              {workflows.map((w) => (
                <option key={w} value={w}>
                  {w}
                  {w === a.default_workflow ? " (default)" : ""}
                </option>
              ))}
            </select>
            {def.data && <span className="pill pill-neutral">{def.data.kind}</span>}
            <span className="spacer" />
            {def.data && (
              <button className="link" onClick={() => setShowSource(!showSource)}>
                {showSource ? "graph" : "source"}
              </button>
            )}
          </div>
          <ErrorBanner error={def.error} />
          {def.loading && !def.data && <Loading what="the workflow" />}
          {def.data &&
            (showSource ? (
              <pre className="source">{def.data.source}</pre>
            ) : (
              <WorkflowGraph kind={def.data.kind} definition={def.data.definition} testId="workflow-graph" />
            ))}
        </section>
        <section className="card side">
          <h2>Invoke</h2>
          <textarea
            data-testid="invoke-input"
            className="mono"
            rows={8}
            value={input}
            spellCheck={false}
            onChange={(e) => setInput(e.target.value)}
          />
          <div className="row">
            <select data-testid="invoke-mode" value={mode} onChange={(e) => setMode(e.target.value as "sync" | "async")}>
              <option value="sync">sync</option>
              <option value="async">async</option>
            </select>
            <button className="primary" data-testid="invoke-submit" onClick={invoke} disabled={invoking}>
              {invoking ? "Running…" : "Invoke"}
            </button>
          </div>
          {invokeError && (
            <div className="error-text" data-testid="invoke-error" role="alert">
              {invokeError}
            </div>
          )}
          {outcome && (
            <div className="invoke-outcome">
              <div className="muted small">HTTP {outcome.status}</div>
              <JsonView value={outcome.body} testId="invoke-result" />
              {outcome.executionId && (
                <Link data-testid="invoke-execution-link" to={`/executions/${outcome.executionId}`}>
                  Open execution {outcome.executionId.slice(0, 12)}…
                </Link>
              )}
            </div>
          )}
        </section>
      </div>
      <TriggersSection app={name} />
      {confirming && (
        <ConfirmDialog
          message={`Undeploy ${a.name}? Its sandboxes stop on every host; its executions stay listed.`}
          onYes={undeploy}
          onNo={() => setConfirming(false)}
        />
      )}
    </div>
  );
}
