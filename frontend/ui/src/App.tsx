import { createContext, lazy, Suspense, useCallback, useContext, useEffect, useState } from "react";
import { BrowserRouter, Navigate, NavLink, Route, Routes, useLocation, useNavigate } from "react-router-dom";
import { getJson, getToken, setToken, type Identity } from "./api";
import { SignInPage } from "./pages/SignIn";
import { AppsPage } from "./pages/Apps";
import { AppPage } from "./pages/AppPage";
import { ExecutionsPage } from "./pages/Executions";
import { ExecutionPage } from "./pages/Execution";
import { ClusterPage } from "./pages/Cluster";

// The editor page brings CodeMirror: loaded when opened.
const NewAppPage = lazy(() => import("./pages/NewApp").then((m) => ({ default: m.NewAppPage })));

interface Session {
  me: Identity | null;
  signIn: (token: string) => Promise<void>;
  signOut: () => void;
}
const SessionContext = createContext<Session>({ me: null, signIn: async () => {}, signOut: () => {} });
export const useSession = () => useContext(SessionContext);

function NotFound() {
  return (
    <div className="page" data-testid="not-found">
      <h1>Not found</h1>
      <p>
        This page does not exist. <NavLink to="/apps">Back to the applications</NavLink>
      </p>
    </div>
  );
}

function Shell({ children }: { children: React.ReactNode }) {
  const { me, signOut } = useSession();
  const [open, setOpen] = useState(false);
  const location = useLocation();
  useEffect(() => setOpen(false), [location.pathname]);
  return (
    <div className="shell">
      <header className="topbar">
        <button className="menu-toggle" aria-label="menu" data-testid="nav-toggle" onClick={() => setOpen(!open)}>
          ☰
        </button>
        <NavLink to="/apps" className="brand">
          SAND
        </NavLink>
        <span className="spacer" />
        {me && (
          <span className="who">
            <span data-testid="whoami-user">{me.user}</span>
            {me.role === "admin" && <span className="pill pill-admin">admin</span>}
            <button className="link" data-testid="signout" onClick={signOut}>
              Sign out
            </button>
          </span>
        )}
      </header>
      <div className="body">
        <nav className={`sidenav${open ? " open" : ""}`} onClick={() => setOpen(false)}>
          <NavLink to="/apps" data-testid="nav-apps">
            Applications
          </NavLink>
          <NavLink to="/executions" data-testid="nav-executions">
            Executions
          </NavLink>
          <NavLink to="/cluster" data-testid="nav-cluster">
            Cluster
          </NavLink>
        </nav>
        <main className="content">{children}</main>
      </div>
    </div>
  );
}

function RequireAuth({ children }: { children: React.ReactNode }) {
  const location = useLocation();
  if (!getToken()) return <Navigate to="/signin" replace state={{ from: location.pathname }} />;
  return <Shell>{children}</Shell>;
}

function Routed() {
  const navigate = useNavigate();
  const [me, setMe] = useState<Identity | null>(null);

  const signIn = useCallback(async (token: string) => {
    setToken(token);
    try {
      setMe(await getJson<Identity>("/v1/whoami"));
    } catch (e) {
      setToken(null);
      throw e;
    }
  }, []);
  const signOut = useCallback(() => {
    setToken(null);
    setMe(null);
    navigate("/signin");
  }, [navigate]);

  useEffect(() => {
    const token = getToken();
    if (token && !me) getJson<Identity>("/v1/whoami").then(setMe, () => undefined);
  }, [me]);
  useEffect(() => {
    const onUnauthorized = (e: Event) => {
      setToken(null);
      setMe(null);
      navigate("/signin", { state: { message: (e as CustomEvent<string>).detail } });
    };
    window.addEventListener("sand:unauthorized", onUnauthorized);
    return () => window.removeEventListener("sand:unauthorized", onUnauthorized);
  }, [navigate]);

  const guard = (el: React.ReactNode) => <RequireAuth>{el}</RequireAuth>;
  return (
    <SessionContext.Provider value={{ me, signIn, signOut }}>
      <Routes>
        <Route path="/signin" element={<SignInPage />} />
        <Route path="/" element={<Navigate to="/apps" replace />} />
        <Route path="/apps" element={guard(<AppsPage />)} />
        <Route
          path="/apps/new"
          element={guard(
            <Suspense fallback={<div className="loading">Loading the editor…</div>}>
              <NewAppPage />
            </Suspense>,
          )}
        />
        <Route path="/apps/:name" element={guard(<AppPage />)} />
        <Route path="/executions" element={guard(<ExecutionsPage />)} />
        <Route path="/executions/:id" element={guard(<ExecutionPage />)} />
        <Route path="/cluster" element={guard(<ClusterPage />)} />
        <Route path="*" element={getToken() ? <Shell><NotFound /></Shell> : <NotFound />} />
      </Routes>
    </SessionContext.Provider>
  );
}

export function App() {
  return (
    <BrowserRouter basename="/ui">
      <Routed />
    </BrowserRouter>
  );
}
