import { useState, type ChangeEvent } from "react";
import { Link } from "react-router-dom";
import { BACKENDS, deployStream, enc, listApps, type Backend } from "../api";
import { Empty, ErrorBanner, Loading, useAsync } from "../components/common";
import { uploadCheck } from "../lib/upload";
import { DeployProgress, finishDeploy, idleDeploy, type DeployState } from "../components/Deploy";

export function AppsPage() {
  const apps = useAsync(listApps, []);
  const [uploadError, setUploadError] = useState<string | null>(null);
  const [backend, setBackend] = useState<Backend>("docker");
  const [upload, setUpload] = useState<DeployState>(idleDeploy);

  const onFile = async (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    e.target.value = "";
    if (!file) return;
    setUploadError(null);
    const check = uploadCheck(file.name, file.size);
    if ("error" in check) {
      setUploadError(check.error);
      return;
    }
    let state: DeployState = { ...idleDeploy };
    setUpload(state);
    try {
      const last = await deployStream(`/v1/apps?backend=${backend}`, file, check.type, (line) => {
        state = { ...state, lines: [...state.lines, line] };
        setUpload(state);
      });
      state = finishDeploy(state, last);
    } catch (err) {
      state = finishDeploy(state, null, err);
    }
    setUpload(state);
    if (!state.ok) {
      setUploadError([state.result, ...state.problems].join("\n"));
    }
    apps.reload(true);
  };

  return (
    <div className="page">
      <div className="page-head">
        <h1>Applications</h1>
        <span className="spacer" />
        <label className="upload button">
          Upload .zip/.tar
          <input data-testid="upload-app" type="file" accept=".zip,.tar" onChange={onFile} />
        </label>
        <select aria-label="backend for uploads" value={backend} onChange={(e) => setBackend(e.target.value as Backend)}>
          {BACKENDS.map((b) => (
            <option key={b} value={b}>
              {b}
            </option>
          ))}
        </select>
        <Link to="/apps/new" className="button primary" data-testid="new-app">
          New application
        </Link>
      </div>
      {uploadError && (
        <div className="banner banner-error pre" data-testid="upload-error" role="alert">
          {uploadError}
        </div>
      )}
      <DeployProgress state={upload} testPrefix="upload" />
      <ErrorBanner error={apps.error} />
      {apps.loading && !apps.data ? (
        <Loading what="applications" />
      ) : apps.data && apps.data.length === 0 ? (
        <Empty>
          No applications yet — <Link to="/apps/new">create one</Link> or upload a .zip of an app directory.
        </Empty>
      ) : (
        apps.data && (
          <div className="table-scroll">
            <table data-testid="apps-table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Version</th>
                  <th>Backend</th>
                  <th>Default workflow</th>
                  <th>Hosts</th>
                  <th>Deployed</th>
                </tr>
              </thead>
              <tbody>
                {apps.data.map((a) => (
                  <tr key={a.name} data-testid={`app-row-${a.name}`}>
                    <td>
                      <Link to={`/apps/${enc(a.name ?? "")}`}>{a.name}</Link>
                    </td>
                    <td>{a.version ?? "—"}</td>
                    <td>{a.backend ?? "—"}</td>
                    <td>{a.default_workflow ?? "—"}</td>
                    <td>{a.placement?.hosts?.join(", ") || "—"}</td>
                    <td className="muted">{a.deployed_at ?? "—"}</td>
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
