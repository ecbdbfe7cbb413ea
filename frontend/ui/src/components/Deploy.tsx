import { ApiError, type DeployLine } from "../api";

export interface DeployState {
  lines: DeployLine[];
  result: string | null;
  problems: string[];
  ok: boolean | null;
}
export const idleDeploy: DeployState = { lines: [], result: null, problems: [], ok: null };

/** The final words of a deploy: its last line, or the refusal it got. */
export function finishDeploy(state: DeployState, last: DeployLine | null, err?: unknown): DeployState {
  if (err !== undefined) {
    const problems = err instanceof ApiError ? err.problems : [];
    const msg = err instanceof Error ? err.message : String(err);
    return { ...state, ok: false, result: msg, problems };
  }
  if (last?.status === "deployed") {
    return { ...state, ok: true, result: `deployed version ${last.app?.version ?? "?"}`, problems: [] };
  }
  if (last?.status === "failed") {
    const problems = last.problems ?? [];
    return { ...state, ok: false, result: `deploy failed: ${problems.length} problem(s)`, problems };
  }
  return { ...state, ok: false, result: "the deploy ended without a result", problems: [] };
}

export function DeployProgress({ state, testPrefix }: { state: DeployState; testPrefix: "deploy" | "upload" }) {
  if (state.lines.length === 0 && state.result === null) return null;
  return (
    <div className="card deploy-box">
      <ol className="progress" data-testid={`${testPrefix}-progress`}>
        {state.lines
          .filter((l) => l.phase)
          .map((l, i) => (
            <li key={i} data-testid={`${testPrefix}-phase`}>
              <span className="phase">{l.phase}</span>
              {l.elapsed_s !== undefined && <span className="muted"> · {l.elapsed_s.toFixed(1)} s</span>}
            </li>
          ))}
        {state.ok === null && <li className="muted">working…</li>}
      </ol>
      {state.result !== null && (
        <div data-testid={`${testPrefix}-result`} className={state.ok ? "ok-text" : "error-text"}>
          <div>{state.result}</div>
          {state.problems.length > 0 && (
            <ul>
              {state.problems.map((p, i) => (
                <li key={i}>{p}</li>
              ))}
            </ul>
          )}
        </div>
      )}
    </div>
  );
}
