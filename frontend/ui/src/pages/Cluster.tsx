import { getJson, type ClusterDoc } from "../api";
import { Empty, ErrorBanner, Loading, StatusPill, useAsync } from "../components/common";

export function ClusterPage() {
  const cluster = useAsync(() => getJson<ClusterDoc>("/v1/cluster"), []);
  return (
    <div className="page">
      <div className="page-head">
        <h1>Cluster</h1>
        <span className="spacer" />
        <button onClick={() => cluster.reload()}>Refresh</button>
      </div>
      <ErrorBanner error={cluster.error} />
      {cluster.loading && !cluster.data ? (
        <Loading what="the cluster" />
      ) : cluster.data && cluster.data.hosts.length === 0 ? (
        <Empty>No hosts answered — start the stack with `sand up`.</Empty>
      ) : (
        cluster.data && (
          <div className="table-scroll">
            <table data-testid="hosts-table">
              <thead>
                <tr>
                  <th>Host</th>
                  <th>Health</th>
                  <th>Sandboxes and workers</th>
                </tr>
              </thead>
              <tbody>
                {cluster.data.hosts.map((h) => (
                  <tr key={h.host_id} data-testid={`host-row-${h.host_id}`}>
                    <td className="mono">{h.host_id}</td>
                    <td>
                      <StatusPill status={h.healthy ? "HEALTHY" : "UNREACHABLE"} />
                      {h.error && <div className="error-text small">{h.error}</div>}
                    </td>
                    <td>
                      {h.sandboxes.length === 0 && <span className="muted">no sandboxes (deploy an app)</span>}
                      {h.sandboxes.map((s) => (
                        <div key={s.app} className="sandbox" data-testid={`sandbox-${s.app}`}>
                          <strong>{s.app}</strong> <span className="muted">{s.backend}</span>{" "}
                          {s.version !== undefined && <span className="muted">v{s.version} </span>}
                          <span className={`pill ${s.state === "running" ? "pill-succeeded" : "pill-neutral"}`}>{s.state}</span>
                          <ul className="workers">
                            {s.workers.map((w) => (
                              <li key={w.grain} data-testid={`worker-${s.app}-${w.grain}`}>
                                <span className={`dot ${w.healthy ? "dot-ok" : "dot-bad"}`} />
                                {w.grain} <span className="muted">{w.pid !== null ? `pid ${w.pid}` : "no process"}</span>
                                {w.error ? (
                                  <div className="worker-error" data-testid="worker-error">
                                    {w.error}
                                  </div>
                                ) : null}
                              </li>
                            ))}
                          </ul>
                        </div>
                      ))}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )
      )}
    </div>
  );
}
