import { useEffect, useMemo, useState } from "react";
import { Link } from "react-router-dom";
import { ApiError, BACKENDS, deployStream, request, type Backend } from "../api";
import { ErrorBanner } from "../components/common";
import { DeployProgress, finishDeploy, idleDeploy, type DeployState } from "../components/Deploy";
import { Editor } from "../components/Editor";
import { placeProblem, problemsOf } from "../lib/problems";
import { badFilePath, renameAppYaml, templateFiles, zipFiles } from "../lib/template";

type Validation =
  | { state: "idle" | "checking" }
  | { state: "valid" }
  | { state: "invalid"; problems: string[] }
  | { state: "unavailable"; message: string };

const NAME_RULE = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function NewAppPage() {
  const [name, setName] = useState("my-app");
  const [files, setFiles] = useState<Record<string, string>>(() => templateFiles("my-app"));
  const [active, setActive] = useState("app.yaml");
  const [adding, setAdding] = useState(false);
  const [newPath, setNewPath] = useState("");
  const [addError, setAddError] = useState<string | null>(null);
  const [validation, setValidation] = useState<Validation>({ state: "idle" });
  const [backend, setBackend] = useState<Backend>("docker");
  const [deploy, setDeploy] = useState<DeployState>(idleDeploy);
  const [deploying, setDeploying] = useState(false);
  const paths = useMemo(() => Object.keys(files), [files]);

  // Validate with the server as the user types (debounced): the rules live there only.
  useEffect(() => {
    setValidation({ state: "checking" });
    let live = true;
    const timer = window.setTimeout(async () => {
      try {
        const res = await request("POST", "/v1/apps?dry_run=true", zipFiles(files) as BodyInit, {
          "Content-Type": "application/zip",
        });
        await res.text();
        if (live) setValidation({ state: "valid" });
      } catch (e) {
        if (!live) return;
        if (e instanceof ApiError && e.status === 400) {
          setValidation({ state: "invalid", problems: e.problems.length ? e.problems : [e.message] });
        } else {
          setValidation({ state: "unavailable", message: e instanceof Error ? e.message : String(e) });
        }
      }
    }, 400);
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
  }, [files]);

  const onName = (value: string) => {
    setName(value);
    setFiles((f) => (f["app.yaml"] !== undefined ? { ...f, "app.yaml": renameAppYaml(f["app.yaml"], value) } : f));
  };

  const addFile = () => {
    const path = newPath.trim();
    const bad = badFilePath(path, paths);
    if (bad) {
      setAddError(bad);
      return;
    }
    const initial = path.endsWith(".py") ? "def handle(event, context):\n    return event\n" : "";
    setFiles({ ...files, [path]: initial });
    setActive(path);
    setAdding(false);
    setNewPath("");
    setAddError(null);
  };

  const removeFile = (path: string) => {
    const rest = { ...files };
    delete rest[path];
    setFiles(rest);
    if (active === path) setActive("app.yaml");
  };

  const problems = useMemo(() => (validation.state === "invalid" ? validation.problems : []), [validation]);
  const inline = useMemo(
    () =>
      problemsOf(problems, active, paths, files).map((p) => ({
        line: p.place.line,
        column: p.place.column,
        message: p.text,
      })),
    [problems, active, paths, files],
  );

  const doDeploy = async () => {
    setDeploying(true);
    let state: DeployState = { ...idleDeploy };
    setDeploy(state);
    try {
      const last = await deployStream(`/v1/apps?backend=${backend}`, zipFiles(files), "application/zip", (line) => {
        state = { ...state, lines: [...state.lines, line] };
        setDeploy(state);
      });
      state = finishDeploy(state, last);
    } catch (e) {
      state = finishDeploy(state, null, e);
    }
    setDeploy(state);
    setDeploying(false);
  };

  const nameError = NAME_RULE.test(name) ? null : `'${name}': an app name must match [a-z0-9][a-z0-9-]{0,62}`;

  return (
    <div className="page">
      <div className="page-head">
        <h1>New application</h1>
      </div>
      <div className="row wrap">
        <label className="inline">
          Name
          <input data-testid="app-name" value={name} onChange={(e) => onName(e.target.value)} spellCheck={false} />
        </label>
        {nameError && <span className="error-text">{nameError}</span>}
        <span className="spacer" />
        <span
          data-testid="validation-status"
          className={`pill ${validation.state === "valid" ? "pill-succeeded" : validation.state === "invalid" ? "pill-failed" : "pill-neutral"}`}
        >
          {validation.state === "valid"
            ? "valid"
            : validation.state === "invalid"
              ? `${validation.problems.length} problem${validation.problems.length === 1 ? "" : "s"}`
              : validation.state === "unavailable"
                ? "validation unavailable"
                : "checking…"}
        </span>
      </div>
      {validation.state === "unavailable" && <ErrorBanner error={validation.message} />}
      <div className="tabs" role="tablist">
        {paths.map((p) => {
          const count = problemsOf(problems, p, paths).length;
          return (
            <span key={p} className={`tab${p === active ? " active" : ""}`}>
              <button role="tab" data-testid={`file-tab-${p}`} aria-selected={p === active} onClick={() => setActive(p)}>
                {p}
                {count > 0 && <span className="badge">{count}</span>}
              </button>
              {p !== "app.yaml" && (
                <button className="link small" aria-label={`remove ${p}`} onClick={() => removeFile(p)}>
                  ×
                </button>
              )}
            </span>
          );
        })}
        <button className="tab-add" data-testid="add-file" onClick={() => setAdding(!adding)}>
          + file
        </button>
      </div>
      {adding && (
        <div className="row wrap add-file">
          <input
            data-testid="add-file-path"
            placeholder="grains/other.py"
            value={newPath}
            onChange={(e) => setNewPath(e.target.value)}
            onKeyDown={(e) => e.key === "Enter" && addFile()}
          />
          <button data-testid="add-file-confirm" onClick={addFile}>
            Add
          </button>
          {addError && <span className="error-text">{addError}</span>}
        </div>
      )}
      {files[active] !== undefined && (
        <Editor
          key={active}
          path={active}
          value={files[active]}
          onChange={(text) => setFiles((f) => ({ ...f, [active]: text }))}
          problems={inline}
        />
      )}
      {problems.length > 0 && (
        <ul className="problems">
          {problems.map((p, i) => {
            const place = placeProblem(p, paths, files);
            return (
              <li key={i} data-testid="problem">
                {place.file ? (
                  <button className="link" onClick={() => setActive(place.file as string)}>
                    {p}
                  </button>
                ) : (
                  p
                )}
              </li>
            );
          })}
        </ul>
      )}
      <div className="row wrap deploy-row">
        <label className="inline">
          Backend
          <select data-testid="deploy-backend" value={backend} onChange={(e) => setBackend(e.target.value as Backend)}>
            {BACKENDS.map((b) => (
              <option key={b} value={b}>
                {b}
              </option>
            ))}
          </select>
        </label>
        <button className="primary" data-testid="deploy" onClick={doDeploy} disabled={deploying || nameError !== null}>
          {deploying ? "Deploying…" : "Deploy"}
        </button>
        {deploy.ok && <Link to={`/apps/${encodeURIComponent(name)}`}>Open {name}</Link>}
      </div>
      <DeployProgress state={deploy} testPrefix="deploy" />
    </div>
  );
}
