// A Task waiting for a callback (issue 23): its task token, the forms that send its
// result or its failure to POST /v1/tasks/{token}/success|failure as the signed-in user,
// and the button that sends a heartbeat (POST /v1/tasks/{token}/heartbeat).
import { useMemo, useState, type FormEvent, type ReactNode } from "react";
import { ApiError, sendTaskFailure, sendTaskHeartbeat, sendTaskSuccess, type TaskAnswer } from "../api";
import { MAX_CAUSE_CHARS, MAX_ERROR_CHARS, callbackErrorText, failureBody, parseOutput } from "../lib/callback";
import type { CallbackWait } from "../lib/history";
import { Time } from "./common";
import { Editor } from "./Editor";

/** What the server said to a callback: shown by the state's panel, which outlives this
 * one (the wait ends, the execution is refreshed, the form goes). */
export interface CallbackAnswer {
  ok: boolean;
  text: string;
}

/** Sends one callback; null when it was taken, else what to show in the form. A 409 (the
 * task no longer waits) is an answer too: nothing in the form can change it. */
type Send = (call: () => Promise<TaskAnswer>) => Promise<string | null>;

export function TaskCallback({ wait, onAnswer }: { wait: CallbackWait; onAnswer: (answer: CallbackAnswer) => void }) {
  const [dialog, setDialog] = useState<"success" | "failure" | null>(null);
  const [beating, setBeating] = useState(false);
  // kept with its token: the page may draw another state's wait in this same panel
  const [beat, setBeat] = useState<{ token: string; shown: HeartbeatShown } | null>(null);
  const send: Send = async (call) => {
    try {
      const answer = await call();
      setDialog(null);
      onAnswer({ ok: true, text: `sent: the task is ${answer.status}` });
      return null;
    } catch (e) {
      const text = callbackErrorText(e);
      if (!(e instanceof ApiError && e.status === 409)) return text;
      setDialog(null);
      onAnswer({ ok: false, text });
      return null;
    }
  };
  const sendBeat = async () => {
    setBeating(true);
    setBeat(null);
    const token = wait.token;
    const shown = await heartbeat(token, onAnswer);
    setBeating(false);
    if (shown) setBeat({ token, shown });
  };
  return (
    <div className="callback" data-testid="task-callback">
      <h3>Waiting for a callback</h3>
      <div className="muted small">
        Its grain{wait.grain ? ` ${wait.grain}` : ""} has returned; the state goes on when its result or failure is sent
        with this task token (<code>$$.Task.Token</code>), or fails when the wait times out.
      </div>
      <TokenField token={wait.token} />
      <div className="muted small" data-testid="callback-deadlines">
        {wait.timeoutAtMs !== null ? (
          <>
            times out <Time ms={wait.timeoutAtMs} />
          </>
        ) : (
          "no timeout"
        )}
        {wait.heartbeatS !== null ? ` · needs a heartbeat at least every ${wait.heartbeatS} s` : ""}
      </div>
      <div className="row">
        <button className="primary" data-testid="send-success" onClick={() => setDialog("success")}>
          Send success…
        </button>
        <button className="danger" data-testid="send-failure" onClick={() => setDialog("failure")}>
          Send failure…
        </button>
        <HeartbeatButton sending={beating} onSend={() => void sendBeat()} />
      </div>
      <HeartbeatAnswer shown={beat?.token === wait.token ? beat.shown : null} />
      {dialog === "success" && <SuccessDialog token={wait.token} send={send} onCancel={() => setDialog(null)} />}
      {dialog === "failure" && <FailureDialog token={wait.token} send={send} onCancel={() => setDialog(null)} />}
    </div>
  );
}

/** What the button shows of its last heartbeat: the time it left (epoch ms), or why the
 * server refused it. */
export type HeartbeatShown = { ok: true; atMs: number } | { ok: false; text: string };

/** Sends a heartbeat for `token` as the signed-in user, and says what to show by the button;
 * null when the task no longer waits (a 409): that refusal goes to `onAnswer`, as the other
 * callbacks' 409 does, since nothing here can change it. Never rejects. */
export async function heartbeat(
  token: string,
  onAnswer: (answer: CallbackAnswer) => void,
  now: () => number = Date.now,
): Promise<HeartbeatShown | null> {
  const atMs = now();
  try {
    await sendTaskHeartbeat(token);
    return { ok: true, atMs };
  } catch (e) {
    const text = callbackErrorText(e);
    if (!(e instanceof ApiError && e.status === 409)) return { ok: false, text };
    onAnswer({ ok: false, text });
    return null;
  }
}

/** `HH:MM:SS` of `ms` in the browser's zone. */
function clockTime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** Send heartbeat, held while one is under way. */
export function HeartbeatButton({ sending, onSend }: { sending: boolean; onSend: () => void }) {
  return (
    <button data-testid="send-heartbeat" disabled={sending} onClick={onSend}>
      {sending ? "Sending…" : "Send heartbeat"}
    </button>
  );
}

/** The last heartbeat's confirmation or refusal (nothing before the first, or while one is
 * under way). */
export function HeartbeatAnswer({ shown }: { shown: HeartbeatShown | null }) {
  if (shown === null) return null;
  if (shown.ok) {
    return (
      <div className="ok-text small" role="status" data-testid="heartbeat-sent">
        {`Heartbeat sent at ${clockTime(shown.atMs)}; the heartbeat clock restarts`}
      </div>
    );
  }
  return (
    <div className="banner banner-error" role="alert" data-testid="heartbeat-error">
      {shown.text}
    </div>
  );
}

/** The token, read-only and selected on focus, with a button that copies it. */
function TokenField({ token }: { token: string }) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async () => {
    try {
      // the clipboard needs a secure context (https or localhost): else copy it by hand
      await navigator.clipboard.writeText(token);
      setCopied("copied");
    } catch {
      setCopied("select it and press Ctrl+C");
    }
  };
  return (
    <div className="row token-field">
      <input
        readOnly
        className="mono"
        value={token}
        aria-label="task token"
        data-testid="task-token"
        onFocus={(e) => e.currentTarget.select()}
      />
      <button data-testid="copy-token" onClick={() => void copy()}>
        Copy
      </button>
      {copied && <span className="muted small">{copied}</span>}
    </div>
  );
}

function Dialog({ title, testId, children }: { title: string; testId: string; children: ReactNode }) {
  return (
    <div className="modal-back" role="dialog" aria-modal="true" aria-label={title}>
      <div className="modal modal-wide" data-testid={testId}>
        <h2>{title}</h2>
        {children}
      </div>
    </div>
  );
}

/** The error of the last attempt, and Cancel / the dialog's send button. */
function DialogFooter({
  error,
  sending,
  canSend,
  label,
  onCancel,
}: {
  error: string | null;
  sending: boolean;
  canSend: boolean;
  label: string;
  onCancel: () => void;
}) {
  return (
    <>
      {error && (
        <div className="banner banner-error" role="alert" data-testid="callback-error">
          {error}
        </div>
      )}
      <div className="row right">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="primary" data-testid="callback-send" disabled={!canSend || sending}>
          {sending ? "Sending…" : label}
        </button>
      </div>
    </>
  );
}

/** Sends with `send`, and keeps its error and whether it is under way. */
function useSending(send: Send) {
  const [error, setError] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const run = async (call: () => Promise<TaskAnswer>) => {
    setSending(true);
    setError(null);
    const problem = await send(call);
    setSending(false);
    setError(problem);
  };
  return { error, sending, run };
}

function SuccessDialog({ token, send, onCancel }: { token: string; send: Send; onCancel: () => void }) {
  const [text, setText] = useState("{}");
  const parsed = useMemo(() => parseOutput(text), [text]);
  const problems = useMemo(
    () => (parsed.ok ? [] : [{ line: parsed.line, column: parsed.column, message: parsed.message }]),
    [parsed],
  );
  const { error, sending, run } = useSending(send);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (parsed.ok) void run(() => sendTaskSuccess(token, parsed.value));
  };
  return (
    <Dialog title="Send success" testId="success-dialog">
      <form onSubmit={submit} className="callback-form">
        <div className="small">The task&apos;s result: any JSON value</div>
        <div className="callback-editor">
          <Editor path="output.json" value={text} onChange={setText} problems={problems} />
        </div>
        <div className={parsed.ok ? "muted small" : "error-text small"} data-testid="output-validity">
          {parsed.ok ? "valid JSON" : parsed.message}
        </div>
        <DialogFooter error={error} sending={sending} canSend={parsed.ok} label="Send success" onCancel={onCancel} />
      </form>
    </Dialog>
  );
}

function FailureDialog({ token, send, onCancel }: { token: string; send: Send; onCancel: () => void }) {
  const [errorName, setErrorName] = useState("");
  const [cause, setCause] = useState("");
  const { error, sending, run } = useSending(send);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run(() => sendTaskFailure(token, failureBody(errorName, cause)));
  };
  return (
    <Dialog title="Send failure" testId="failure-dialog">
      <form onSubmit={submit} className="callback-form">
        <label>
          Error <span className="muted small">(the name Retry and Catch match; optional)</span>
          <input
            value={errorName}
            maxLength={MAX_ERROR_CHARS}
            onChange={(e) => setErrorName(e.target.value)}
            placeholder="Rejected"
            data-testid="failure-error"
          />
        </label>
        <label>
          Cause <span className="muted small">(why, for a person; optional)</span>
          <textarea
            rows={4}
            value={cause}
            maxLength={MAX_CAUSE_CHARS}
            onChange={(e) => setCause(e.target.value)}
            data-testid="failure-cause"
          />
        </label>
        <DialogFooter error={error} sending={sending} canSend label="Send failure" onCancel={onCancel} />
      </form>
    </Dialog>
  );
}
