// The only way the GUI talks to SAND: the public HTTP API, relative URLs, Bearer token.

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

// ---- shapes (frontend/openapi.yaml) ----
export interface Identity {
  user: string;
  role: "user" | "admin";
  token_id: string;
}
export interface AppMetadata {
  name: string;
  version?: number;
  default_workflow?: string;
  workflows?: Record<string, { entry_grain?: string }>;
  grains?: string[];
  backend?: string;
  owner?: string;
  deployed_at?: string;
  placement?: { hosts?: string[]; grains?: Record<string, string[]> };
}
export type ExecStatus = "RUNNING" | "SUCCEEDED" | "FAILED" | "ABORTED";
/** What started an execution (decision 0034): a schedule's firing or a topic's record. */
export type ExecutionTrigger =
  | { name: string; kind: "schedule"; /** the firing time, ISO-8601 UTC */ time: string }
  | { name: string; kind: "topic"; topic: string; partition: number; offset: number };
export interface ExecutionSummary {
  execution_id: string;
  app: string;
  workflow: string;
  status: ExecStatus;
  started_ms: number;
  finished_ms?: number;
  error?: string;
  cause?: string | null;
  redrive_count?: number;
  /** absent (or null) when no trigger started it */
  trigger?: ExecutionTrigger | null;
}
export interface ExecutionDocument extends Partial<ExecutionSummary> {
  execution_id: string;
  status: ExecStatus;
  input?: unknown;
  output?: unknown;
}
export interface HistoryEvent {
  type: string;
  at_ms: number;
  execution_id?: string;
  state?: string | null;
  path?: string;
  [field: string]: unknown;
}
/** A trigger of an app's `app.yaml` as described (defaults filled in), with its state. Times
 * are ISO-8601 UTC. */
interface TriggerState {
  name: string;
  workflow: string;
  paused: boolean;
  /** when it was paused; null while active */
  paused_at: string | null;
}
export interface ScheduleTrigger extends TriggerState {
  kind: "schedule";
  /** `cron(0 3 * * 1-5)` or `rate(5 minutes)` */
  schedule: string;
  /** IANA zone of a cron schedule; UTC for a rate */
  timezone: string;
  input: unknown;
  missed: "run_once" | "skip";
  /** null while paused */
  next_firing: string | null;
  last_firing: { time: string; execution_id: string } | null;
}
export interface TopicTrigger extends TriggerState {
  kind: "topic";
  topic: string;
  /** records of the topic not yet started (summed over its partitions); null when unknown */
  lag: number | null;
}
export type Trigger = ScheduleTrigger | TopicTrigger;
export interface WorkflowDoc {
  app: string;
  workflow: string;
  kind: "asl" | "native";
  definition: Record<string, unknown>;
  source: string;
}
export interface ClusterDoc {
  hosts: {
    host_id: string;
    healthy: boolean;
    error: string | null;
    sandboxes: {
      app: string;
      owner?: string | null;
      version?: number;
      backend: string;
      state: string;
      /** `error`: why the worker is not healthy although it runs (its grain cannot be imported). */
      workers: { grain: string; healthy: boolean; pid: number | null; error?: string }[];
    }[];
  }[];
}

export const enc = encodeURIComponent;

export async function listApps(): Promise<AppMetadata[]> {
  const body = await getJson<{ apps?: AppMetadata[] } | AppMetadata[]>("/v1/apps");
  return Array.isArray(body) ? body : (body.apps ?? []);
}

// ---- triggers (decision 0034): schedules and Kafka topic triggers of an app ----

const triggerUrl = (app: string, name: string, action: "pause" | "resume") =>
  `/v1/apps/${enc(app)}/triggers/${enc(name)}/${action}`;

/** The app's triggers, sorted by name, each with its state (empty when it declares none). */
export async function listTriggers(app: string): Promise<Trigger[]> {
  const body = await getJson<{ triggers: Trigger[] }>(`/v1/apps/${enc(app)}/triggers`);
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
export interface TaskAnswer {
  status: string;
}
export interface TaskFailure {
  error?: string;
  cause?: string;
}

const taskUrl = (token: string, action: "success" | "failure" | "heartbeat") =>
  `/v1/tasks/${enc(token)}/${action}`;

/** Ends the waiting Task with `output` (any JSON value) as its result. */
export function sendTaskSuccess(token: string, output: unknown): Promise<TaskAnswer> {
  return sendJson<TaskAnswer>("POST", taskUrl(token, "success"), { output });
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
    const body: { events: HistoryEvent[]; next_page: string | null } = await getJson(
      `/v1/executions/${enc(id)}/history?limit=1000${q}`,
    );
    events.push(...body.events);
    page = body.next_page;
    if (!page) break;
  }
  return events;
}

export interface DeployLine {
  phase?: string;
  elapsed_s?: number;
  status?: "deployed" | "failed";
  app?: AppMetadata;
  problems?: string[];
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
