// The only way the GUI talks to SAND: the public HTTP API, relative URLs, Bearer token.
import {
  executionSummaryStatusValues,
  pathsV1AppsPostParametersQueryBackendValues,
  type components,
} from "./generated/openapi";

export const TOKEN_KEY = "sand.token";

export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}
export function setToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

/**
 * A refusal or failure of the server, with its message (and problems, when it gave some).
 * `retryAfterS`: for a 429 (busy: the app's hosts are at their admission bound, decision 0023),
 * the seconds to wait before trying again; null otherwise or when the server did not say.
 */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly problems: string[] = [],
    readonly retryAfterS: number | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** The seconds of a 429: the body's `retry_after_s`, else the `Retry-After` header's. */
function retryAfterOf(res: Response, body: Record<string, unknown> | null): number | null {
  if (res.status !== 429) return null;
  const fromBody = body?.retry_after_s;
  if (typeof fromBody === "number" && Number.isInteger(fromBody) && fromBody >= 0) return fromBody;
  const header = res.headers.get("Retry-After")?.trim() ?? "";
  return /^\d+$/.test(header) ? Number(header) : null;
}

type Json = unknown;

function authHeaders(extra: Record<string, string> = {}): Record<string, string> {
  const token = getToken();
  return token ? { Authorization: `Bearer ${token}`, ...extra } : extra;
}

/** Turns a non-2xx answer into an ApiError carrying the server's own message. */
export async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => "");
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    const message =
      typeof body.error === "string"
        ? body.error
        : typeof body.Error === "string"
          ? `${body.Error}${typeof body.Cause === "string" ? `: ${body.Cause}` : ""}`
          : text;
    const problems = Array.isArray(body.problems) ? body.problems.map(String) : [];
    return new ApiError(message || `HTTP ${res.status}`, res.status, problems, retryAfterOf(res, body));
  } catch {
    return new ApiError(
      text.trim() || `HTTP ${res.status} ${res.statusText}`,
      res.status,
      [],
      retryAfterOf(res, null),
    );
  }
}

export async function request(
  method: string,
  url: string,
  body?: BodyInit,
  headers: Record<string, string> = {},
): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, { method, headers: authHeaders(headers), body });
  } catch (e) {
    throw new ApiError(`cannot reach the server: ${String(e)}`, 0);
  }
  if (res.status === 401) {
    const err = await errorOf(res);
    window.dispatchEvent(new CustomEvent("sand:unauthorized", { detail: err.message }));
    throw err;
  }
  if (!res.ok) throw await errorOf(res);
  return res;
}

export async function getJson<T = Json>(url: string): Promise<T> {
  const res = await request("GET", url);
  return (await res.json()) as T;
}

export async function sendJson<T = Json>(method: string, url: string, body?: Json): Promise<T> {
  const res = await request(
    method,
    url,
    body === undefined ? undefined : JSON.stringify(body),
    body === undefined ? {} : { "Content-Type": "application/json" },
  );
  const text = await res.text();
  return (text ? JSON.parse(text) : {}) as T;
}

// ---- shapes: generated from the contract (frontend/openapi.yaml, decision 0035) ----
// No API document's fields are written here: each type names a schema of the contract, so a
// field renamed or removed there (then `npm run gen:api`) is a type error where it is read.
type Schemas = components["schemas"];

export type Identity = Schemas["Identity"];
export type AppMetadata = Schemas["AppMetadata"];
export type AppList = Schemas["AppList"];
export type AppLogs = Schemas["AppLogs"];
export type ExecStatus = Schemas["ExecutionSummary"]["status"];
/** Every execution status, in the contract's order (the executions page's filter). */
export const EXEC_STATUSES: readonly ExecStatus[] = executionSummaryStatusValues;
/** What started an execution (decision 0034): a schedule's firing or a topic's record. */
export type ExecutionTrigger = Schemas["ExecutionTrigger"];
export type ExecutionSummary = Schemas["ExecutionSummary"];
export type ExecutionList = Schemas["ExecutionList"];
export type ExecutionDocument = Schemas["ExecutionDocument"];
export type HistoryEvent = Schemas["HistoryEvent"];
export type HistoryEventType = HistoryEvent["type"];
export type HistoryPage = Schemas["HistoryPage"];
/** A trigger of an app's `app.yaml` as described (defaults filled in), with its state. */
export type Trigger = Schemas["Trigger"];
export type ScheduleTrigger = Schemas["ScheduleTrigger"];
export type TopicTrigger = Schemas["TopicTrigger"];
export type TriggerList = Schemas["TriggerList"];
export type WorkflowDoc = Schemas["WorkflowDefinition"];
export type ClusterDoc = Schemas["Cluster"];
/** The sandbox backends a deploy may ask for (`POST /v1/apps?backend=`), the first the default
 * the GUI offers. */
export const BACKENDS = pathsV1AppsPostParametersQueryBackendValues;
export type Backend = (typeof BACKENDS)[number];
/** One ndjson line of a deploy's progress. */
export type DeployLine = Schemas["DeployProgress"];

export const enc = encodeURIComponent;

export async function listApps(): Promise<AppMetadata[]> {
  const body = await getJson<AppList>("/v1/apps");
  return body.apps;
}

// ---- triggers (decision 0034): schedules and Kafka topic triggers of an app ----

const triggerUrl = (app: string, name: string, action: "pause" | "resume") =>
  `/v1/apps/${enc(app)}/triggers/${enc(name)}/${action}`;

/** The app's triggers, sorted by name, each with its state (empty when it declares none). */
export async function listTriggers(app: string): Promise<Trigger[]> {
  const body = await getJson<TriggerList>(`/v1/apps/${enc(app)}/triggers`);
  return body.triggers;
}

/** Pauses trigger `name` (pausing a paused one is no error); its new document. */
export function pauseTrigger(app: string, name: string): Promise<Trigger> {
  return sendJson<Trigger>("POST", triggerUrl(app, name, "pause"));
}

/** Resumes trigger `name` (resuming an active one is no error); its new document. */
export function resumeTrigger(app: string, name: string): Promise<Trigger> {
  return sendJson<Trigger>("POST", triggerUrl(app, name, "resume"));
}

// ---- callbacks: a Task waiting on a task token (Resource `<grain>.waitForTaskToken`) ----

/** What the callback routes answer: the wait's status after the call (SUCCEEDED, FAILED,
 * or WAITING after a heartbeat). A task no longer waiting is refused with a 409 whose
 * message names its status ("already SUCCEEDED", "timed out: States.HeartbeatTimeout"). */
export type TaskAnswer = Schemas["TaskStatus"];
export type TaskSuccess = Schemas["TaskSuccess"];
export type TaskFailure = Schemas["TaskFailure"];

const taskUrl = (token: string, action: "success" | "failure" | "heartbeat") =>
  `/v1/tasks/${enc(token)}/${action}`;

/** Ends the waiting Task with `output` (any JSON value) as its result. */
export function sendTaskSuccess(token: string, output: unknown): Promise<TaskAnswer> {
  const body: TaskSuccess = { output };
  return sendJson<TaskAnswer>("POST", taskUrl(token, "success"), body);
}

/** Fails the waiting Task with `error` and `cause` (each left out when not given). */
export function sendTaskFailure(token: string, failure: TaskFailure): Promise<TaskAnswer> {
  return sendJson<TaskAnswer>("POST", taskUrl(token, "failure"), failure);
}

/** Restarts the waiting Task's heartbeat clock (no body). */
export function sendTaskHeartbeat(token: string): Promise<TaskAnswer> {
  return sendJson<TaskAnswer>("POST", taskUrl(token, "heartbeat"));
}

/** Every history event of an execution (all pages, up to the server's cap). */
export async function fullHistory(id: string): Promise<HistoryEvent[]> {
  const events: HistoryEvent[] = [];
  let page: string | null = null;
  for (let i = 0; i < 50; i++) {
    const q: string = page ? `&page=${enc(page)}` : "";
    const body = await getJson<HistoryPage>(`/v1/executions/${enc(id)}/history?limit=1000${q}`);
    events.push(...body.events);
    page = body.next_page;
    if (!page) break;
  }
  return events;
}

/** POSTs an app archive and calls `onLine` for each ndjson progress line as it arrives. */
export async function deployStream(
  url: string,
  body: Blob | Uint8Array,
  contentType: string,
  onLine: (line: DeployLine) => void,
): Promise<DeployLine | null> {
  const res = await request("POST", url, body as BodyInit, { "Content-Type": contentType });
  let last: DeployLine | null = null;
  const handle = (raw: string) => {
    const text = raw.trim();
    if (!text) return;
    const line = JSON.parse(text) as DeployLine;
    last = line;
    onLine(line);
  };
  if (!res.body) {
    (await res.text()).split("\n").forEach(handle);
    return last;
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let nl = buf.indexOf("\n");
    while (nl >= 0) {
      handle(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      nl = buf.indexOf("\n");
    }
  }
  handle(buf + decoder.decode());
  return last;
}
