import { useState, type FormEvent } from "react";
import { Navigate, useLocation, useNavigate } from "react-router-dom";
import { getToken } from "../api";
import { useSession } from "../App";

export function SignInPage() {
  const { signIn } = useSession();
  const navigate = useNavigate();
  const location = useLocation();
  const state = (location.state ?? {}) as { from?: string; message?: string };
  const [token, setTokenText] = useState("");
  const [error, setError] = useState<string | null>(state.message ?? null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!token.trim()) {
      setError("enter a token: `sand users token NAME` makes one; the admin's is in STATE/conf/admin.token");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await signIn(token.trim());
      navigate(state.from && state.from !== "/signin" ? state.from : "/apps", { replace: true });
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  if (getToken() && !busy && !state.message) return <Navigate to="/apps" replace />;
  return (
    <div className="signin">
      <form className="card signin-card" onSubmit={submit}>
        <h1>SAND</h1>
        <p className="muted">Sign in with your API token.</p>
        <label>
          Token
          <input
            data-testid="signin-token"
            type="password"
            autoComplete="off"
            value={token}
            onChange={(e) => setTokenText(e.target.value)}
            autoFocus
          />
        </label>
        {error && (
          <div className="error-text" data-testid="signin-error" role="alert">
            {error}
          </div>
        )}
        <button className="primary" data-testid="signin-submit" type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        <p className="muted small">
          The admin's token is in <code>STATE/conf/admin.token</code> (<code>~/.sand/conf/admin.token</code> by default).
        </p>
      </form>
    </div>
  );
}
