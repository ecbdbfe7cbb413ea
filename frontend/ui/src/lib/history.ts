// Pure views of an execution's history events (decision 0018): each state's outcome for
// the graph, the timeline's rows, the state that failed the execution.
import type { ExecStatus, HistoryEvent, HistoryEventType } from "../api";

// Typed by the contract's event types (frontend/openapi.yaml): a type renamed there breaks here.
const ENDS = new Set<HistoryEventType>(["ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted"]);
// What ends a Task's wait for a callback (issue 23): its result, its failure, its timeout.
const CALLBACK_ENDS = new Set<HistoryEventType>(["TaskSucceeded", "TaskFailed", "TaskTimedOut"]);
// What ends a state's entry, in whatever way (a wait it had ends with it).
const STATE_ENDS = new Set<HistoryEventType>(["StateExited", "StateFailed", "Caught", "RetryScheduled"]);
// How far a task end's start (its time less its duration) may lie from its TaskStarted: the
// two are read from different clocks of one host a few milliseconds apart.
const LATE_MATCH_MS = 250;

/** `waiting`: a Task (Resource `<grain>.waitForTaskToken`) whose grain has returned and
 * that waits for someone to send its result with the task token. */
export type NodeStatus = "succeeded" | "failed" | "caught" | "running" | "waiting" | "cancelled" | "not-run";

const STATUS_LABELS: Record<string, string> = { waiting: "waiting for a callback" };

/** How a status (a node's or a timeline row's) reads to a person. */
export function statusLabel(status: string): string {
  return STATUS_LABELS[status] ?? status;
}

/** A Task's wait for a callback, from its `TaskSubmitted` event. */
export interface CallbackWait {
  /** The task token (`$$.Task.Token`) that a success, failure or heartbeat names. */
  token: string;
  grain: string | null;
  /** When the wait times out (epoch ms; its TimeoutSeconds), if it said. */
  timeoutAtMs: number | null;
  /** The most time between heartbeats (its HeartbeatSeconds); null: none asked. */
  heartbeatS: number | null;
}

/** The wait a `TaskSubmitted` event records; null when it carries no token. */
export function callbackOf(e: HistoryEvent): CallbackWait | null {
  if (typeof e.task_token !== "string" || e.task_token === "") return null;
  const num = (v: unknown) => (typeof v === "number" && v > 0 ? v : null);
  return {
    token: e.task_token,
    grain: typeof e.grain === "string" ? e.grain : null,
    timeoutAtMs: num(e.timeout_at),
    heartbeatS: num(e.heartbeat_s),
  };
}

/** Outcome per state (ASL) or grain (native), over every path and entry it had.
 * A state that failed anywhere is `failed`; else caught, else still running — `waiting`
 * when every open entry waits for a callback (a `TaskSubmitted` with no `TaskSucceeded`,
 * `TaskFailed` or `TaskTimedOut` after it), `cancelled` once the run ended without it (a
 * Map item beside the one that failed the Map) — else succeeded. */
export function nodeStatuses(events: HistoryEvent[]): Record<string, NodeStatus> {
  const seen = new Map<
    string,
    { entered: number; done: number; failed: boolean; caught: boolean; asl: boolean; waiting: Set<string> }
  >();
  let ended = false; // the latest run (the execution or its last redrive) has ended
  const get = (state: string) => {
    let s = seen.get(state);
    if (!s) {
      s = { entered: 0, done: 0, failed: false, caught: false, asl: false, waiting: new Set<string>() };
      seen.set(state, s);
    }
    return s;
  };
  for (const e of events) {
    if (e.type === "ExecutionRedriven") {
      // A redrive runs the failed (and unfinished) states again: their new events decide.
      for (const [state, s] of seen) {
        if (s.failed || s.entered > s.done) seen.delete(state);
      }
      ended = false;
      continue;
    }
    if (ENDS.has(e.type)) ended = true;
    if (!e.state) continue;
    const s = get(e.state);
    // the paths (Map items, branches) where this state waits for a callback
    if (e.type === "TaskSubmitted") s.waiting.add(e.path ?? "");
    else if (CALLBACK_ENDS.has(e.type) || STATE_ENDS.has(e.type)) s.waiting.delete(e.path ?? "");
    switch (e.type) {
      case "StateEntered":
        s.asl = true;
        s.entered++;
        break;
      case "StateExited":
        s.done++;
        break;
      case "StateFailed":
        s.failed = true;
        s.done++;
        break;
      case "Caught":
        s.caught = true;
        s.done++;
        break;
      case "RetryScheduled":
        // This entry ends in a retry: the state is entered again for the next attempt.
        s.done++;
        break;
      case "TaskScheduled":
        if (!s.asl) s.entered++;
        break;
      case "TaskSucceeded":
        if (!s.asl) s.done++;
        break;
      case "TaskFailed":
      case "TaskTimedOut":
        // In ASL a task failure may be retried or caught: the state's own events decide.
        if (!s.asl) {
          s.failed = true;
          s.done++;
        }
        break;
      default:
        break;
    }
  }
  const out: Record<string, NodeStatus> = {};
  for (const [state, s] of seen) {
    if (s.failed) out[state] = "failed";
    else if (s.caught) out[state] = "caught";
    else if (s.entered > s.done) out[state] = ended ? "cancelled" : openStatus(s.entered - s.done, s.waiting.size);
    else if (s.done > 0) out[state] = "succeeded";
  }
  return out;
}

/** A state's open entries: waiting when each of them waits for a callback. */
function openStatus(open: number, waiting: number): NodeStatus {
  return waiting > 0 && waiting >= open ? "waiting" : "running";
}

export interface TimelineRow {
  key: string;
  /** "redrive": where a redrive began (its `state` is the state it ran again from). */
  kind: "state" | "task" | "redrive";
  state: string;
  path: string;
  grain: string | null;
  host: string | null;
  pid: number | null;
  attempt: number | null;
  startMs: number;
  /** Offset from the execution's first event. */
  offsetMs: number;
  durationMs: number | null;
  /** "retried": this attempt failed and the state's Retry runs it again; "redriven": a
   * redrive's row. */
  status: NodeStatus | "retried" | "redriven";
  input: unknown;
  output: unknown;
  error: string | null;
  cause: string | null;
  /** The wait for a callback of a Task state's entry and of its grain instance (from its
   * `TaskSubmitted`); the row's status is `waiting` until the wait ends. */
  callback: CallbackWait | null;
  /** A grain instance that ran on, or started, after its run ended (a sibling of the Map item
   * that failed the Map): its status is what it really did; its output was not used. */
  afterEnd?: boolean;
}

/** One row per state entry and per grain instance, in start order, and one per redrive.
 * What was still open when its run ended (a sibling of the item that failed a Map) ends
 * `cancelled` then; a grain instance among them that went on and ended later gets its real
 * outcome, marked `afterEnd` (its grain was not stopped, only its result dropped). */
export function timelineRows(events: HistoryEvent[]): TimelineRow[] {
  if (events.length === 0) return [];
  const t0 = Math.min(...events.map((e) => e.at_ms));
  const rows: TimelineRow[] = [];
  const openStates = new Map<string, TimelineRow[]>();
  const openTasks = new Map<string, TimelineRow[]>();
  const cancelledTasks = new Map<string, TimelineRow[]>();
  const scheduledInput = new Map<string, unknown>();
  const str = (v: unknown) => (typeof v === "string" ? v : v == null ? null : String(v));
  const close = (open: Map<string, TimelineRow[]>, k: string): TimelineRow | undefined => {
    const list = open.get(k);
    return list && list.length > 0 ? list.shift() : undefined;
  };
  const push = (open: Map<string, TimelineRow[]>, k: string, row: TimelineRow) => {
    rows.push(row);
    const list = open.get(k) ?? [];
    list.push(row);
    open.set(k, list);
  };
  const cancelOpen = (atMs: number) => {
    for (const open of [openStates, openTasks]) {
      for (const list of open.values()) {
        for (const row of list.splice(0)) {
          row.status = "cancelled";
          row.durationMs = atMs - row.startMs;
          if (open === openTasks) {
            const k = `${row.path}|${row.state}`;
            cancelledTasks.set(k, [...(cancelledTasks.get(k) ?? []), row]);
          }
        }
      }
    }
  };
  // The instance a task's end belongs to: the one that started `duration_ms` before it (an
  // instance of an ended run may end after a redrive started the same state again), else
  // the first one still open.
  const taskOf = (k: string, e: HistoryEvent): TimelineRow | undefined => {
    const started = typeof e.duration_ms === "number" ? e.at_ms - e.duration_ms : null;
    if (started !== null) {
      const candidates = [...(openTasks.get(k) ?? []), ...(cancelledTasks.get(k) ?? [])];
      const best = candidates.reduce<TimelineRow | undefined>(
        (a, r) => (a === undefined || Math.abs(r.startMs - started) < Math.abs(a.startMs - started) ? r : a),
        undefined,
      );
      if (best !== undefined && Math.abs(best.startMs - started) <= LATE_MATCH_MS) {
        for (const open of [openTasks, cancelledTasks]) {
          const list = open.get(k);
          const at = list?.indexOf(best) ?? -1;
          if (list && at >= 0) list.splice(at, 1);
        }
        if (best.status === "cancelled") best.afterEnd = true;
        return best;
      }
    }
    return close(openTasks, k);
  };
  let runEnded = false; // the latest run ended: an instance that starts now runs after it
  for (const e of events) {
    if (ENDS.has(e.type)) {
      cancelOpen(e.at_ms);
      runEnded = true;
      continue;
    }
    if (e.type === "ExecutionRedriven") {
      cancelOpen(e.at_ms);
      runEnded = false;
      const count = typeof e.redrive_count === "number" ? e.redrive_count : null;
      rows.push({
        key: `r${rows.length}`,
        kind: "redrive",
        state: str(e.from_state) ?? "",
        path: "",
        grain: null,
        host: null,
        pid: null,
        attempt: count,
        startMs: e.at_ms,
        offsetMs: e.at_ms - t0,
        durationMs: 0,
        status: "redriven",
        input: e.input,
        output: undefined,
        error: null,
        cause: null,
        callback: null,
      });
      continue;
    }
    if (!e.state) continue;
    const path = e.path ?? "";
    const k = `${path}|${e.state}`;
    const base = {
      state: e.state,
      path,
      startMs: e.at_ms,
      offsetMs: e.at_ms - t0,
      durationMs: null,
      status: "running" as TimelineRow["status"],
      output: undefined,
      error: null,
      cause: null,
      callback: null,
    };
    switch (e.type) {
      case "StateEntered":
        push(openStates, k, {
          ...base,
          key: `s${rows.length}`,
          kind: "state",
          grain: null,
          host: str(e.host),
          pid: typeof e.pid === "number" ? e.pid : null,
          attempt: null,
          input: e.input,
        });
        break;
      case "StateExited":
      case "StateFailed":
      case "RetryScheduled":
      case "Caught": {
        const row = close(openStates, k);
        if (row) {
          row.durationMs = e.at_ms - row.startMs;
          row.status =
            e.type === "StateExited"
              ? "succeeded"
              : e.type === "Caught"
                ? "caught"
                : e.type === "RetryScheduled"
                  ? "retried"
                  : "failed";
          if (e.type === "StateExited") row.output = e.output;
          else {
            row.error = str(e.error);
            row.cause = str(e.cause);
          }
        }
        break;
      }
      case "TaskScheduled":
        scheduledInput.set(k, e.input);
        break;
      case "TaskStarted":
        push(openTasks, k, {
          ...base,
          key: `t${rows.length}`,
          kind: "task",
          grain: str(e.grain) ?? e.state,
          host: str(e.host),
          pid: typeof e.pid === "number" ? e.pid : null,
          attempt: typeof e.attempt === "number" ? e.attempt : null,
          input: scheduledInput.get(k),
          ...(runEnded ? { afterEnd: true } : {}),
        });
        break;
      case "TaskSubmitted": {
        const wait = callbackOf(e);
        const state = openStates.get(k)?.[0];
        if (state) Object.assign(state, { status: "waiting", callback: wait });
        // The grain's instance waits on, its output so far what the grain returned (the
        // result comes with the callback); a history that closed it when the grain returned
        // gets a row of its own for the wait.
        const task = openTasks.get(k)?.[0];
        if (task) Object.assign(task, { status: "waiting", callback: wait, output: e.output });
        else {
          push(openTasks, k, {
            ...base,
            key: `t${rows.length}`,
            kind: "task",
            grain: wait?.grain ?? str(e.grain) ?? e.state,
            host: str(e.host),
            pid: typeof e.pid === "number" ? e.pid : null,
            attempt: null,
            input: scheduledInput.get(k),
            status: "waiting",
            callback: wait,
            output: e.output,
          });
        }
        break;
      }
      case "TaskSucceeded":
      case "TaskFailed":
      case "TaskTimedOut": {
        const state = openStates.get(k)?.[0];
        if (state?.status === "waiting") state.status = "running"; // its own end follows
        const row = taskOf(k, e);
        if (row) {
          row.durationMs = typeof e.duration_ms === "number" ? e.duration_ms : e.at_ms - row.startMs;
          row.status = e.type === "TaskSucceeded" ? "succeeded" : "failed";
          if (e.type === "TaskSucceeded") row.output = e.output;
          else {
            row.error = str(e.error);
            row.cause = str(e.cause);
          }
        }
        break;
      }
      default:
        break;
    }
  }
  // A state entry without a host of its own shows the host of its first grain instance.
  for (const row of rows) {
    if (row.kind !== "state" || row.host !== null) continue;
    const task = rows.find(
      (t) => t.kind === "task" && t.state === row.state && t.path === row.path && t.startMs >= row.startMs,
    );
    if (task) {
      row.host = task.host;
      row.pid = task.pid;
    }
  }
  return rows;
}

export interface FailedState {
  state: string;
  path: string;
  error: string | null;
  cause: string | null;
}

/** The state whose failure failed the execution: the last StateFailed at the top level
 * (else the last StateFailed, else the last TaskFailed: the native format). */
export function failedState(events: HistoryEvent[]): FailedState | null {
  const pick = (pred: (e: HistoryEvent) => boolean) => {
    for (let i = events.length - 1; i >= 0; i--) {
      const e = events[i];
      if (e && e.state && pred(e)) {
        return {
          state: e.state,
          path: e.path ?? "",
          error: typeof e.error === "string" ? e.error : null,
          cause: typeof e.cause === "string" ? e.cause : null,
        };
      }
    }
    return null;
  };
  return (
    pick((e) => e.type === "StateFailed" && (e.path ?? "") === "") ??
    pick((e) => e.type === "StateFailed") ??
    pick((e) => e.type === "TaskFailed")
  );
}

/** Where the failure that failed the execution began: in its latest run, the first state
 * that failed with the error and cause the execution failed with (a Task inside a Map item
 * or Parallel branch, whose failure then failed the item, the Map and the execution). */
export function failureOrigin(events: HistoryEvent[]): FailedState | null {
  const last = failedState(events);
  if (last === null) return null;
  let from = 0;
  events.forEach((e, i) => {
    if (e.type === "ExecutionStarted" || e.type === "ExecutionRedriven") from = i;
  });
  const origin = events
    .slice(from)
    .find((e) => e.type === "StateFailed" && e.state && e.error === last.error && e.cause === last.cause);
  return origin && origin.state
    ? { state: origin.state, path: origin.path ?? "", error: last.error, cause: last.cause }
    : last;
}

/** The grain that ran a state (its TaskScheduled/TaskStarted `grain`), else the state name. */
export function grainOf(events: HistoryEvent[], state: string): string {
  for (const e of events) {
    if (e.state === state && typeof e.grain === "string") return e.grain;
  }
  return state;
}

export interface StateLogs {
  /** Lines tagged with this execution (`execution_id=<id>` or `execution=<id>`) and grain,
   * each with the lines that continue it (a traceback). */
  tagged: string[];
  /** Grain output that carries no execution (a grain's own print): it cannot be tied to one. */
  untagged: string[];
}

const TAG = /\b(?:execution_id|execution|grain)=/;
const PATH_TAG = /\bgrain=\S+ path=(\S+)/;
// The lines that continue a record: a Python traceback.
const CONTINUES = /^(\s|Traceback \(|During handling|The above exception|[\w.]*(Error|Exception|Warning|Exit|Interrupt)(:|$))/;

/** A state's path as its lines' `path=` tag carries it: `%` and whitespace as `%XX` of
 * their code point (the worker's `path_tag` in `grain-worker/.../logtag.py`). */
export function pathTag(path: string): string {
  return path.replace(/[%\s]/gu, (c) => `%${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(2, "0")}`);
}

const LEADING_TAGS = /^(?:execution_id|execution)=\S+ grain=\S+ (?:path=\S+ )?/;

/** A line as the state's panel shows it: without the tags that put it there (the worker's
 * `line_prefix`), which the panel's title already says. */
export function withoutTags(line: string): string {
  return line.replace(LEADING_TAGS, "");
}

/** The app's log lines of one execution and grain (grain null: any grain) and, with `path`
 * given, of the task that ran there only: "" is the top level, whose lines carry no
 * `path=` tag; `PriceItems[1]` is one Map item, not its siblings. */
export function logLinesFor(
  logs: string,
  executionId: string,
  grain: string | null,
  path: string | null = null,
): StateLogs {
  const tagged: string[] = [];
  const untagged: string[] = [];
  const word = (l: string, tag: string) => {
    const at = l.indexOf(tag);
    return at >= 0 && (at + tag.length === l.length || /[\s,;]/.test(l.charAt(at + tag.length)));
  };
  // The path tag follows the grain tag directly (the worker's `line_prefix`); a line
  // without one ran at the top level.
  const wherePath = (l: string) => path === null || (PATH_TAG.exec(l)?.[1] ?? "") === pathTag(path);
  const mine = (l: string) =>
    (word(l, `execution_id=${executionId}`) || word(l, `execution=${executionId}`)) &&
    (grain === null || word(l, `grain=${grain}`)) &&
    wherePath(l);
  let block: "none" | "mine" | "other" = "none";
  for (const line of logs.split("\n")) {
    if (line.trim() === "") {
      block = "none";
    } else if (TAG.test(line) || line.startsWith("[")) {
      block = mine(line) ? "mine" : "other";
      if (block === "mine") tagged.push(line);
    } else if (block !== "none" && CONTINUES.test(line)) {
      if (block === "mine") tagged.push(line);
    } else {
      block = "none";
      untagged.push(line);
    }
  }
  return { tagged, untagged };
}

const END_OF: Record<Exclude<ExecStatus, "RUNNING">, HistoryEventType> = {
  SUCCEEDED: "ExecutionSucceeded",
  FAILED: "ExecutionFailed",
  ABORTED: "ExecutionAborted",
};

/** Whether the history has recorded the execution's end (after its last redrive): the
 * record of an execution can say it ended before all of its events are written. The end
 * must be the one the record names (`status`; a redriven execution that succeeded still has
 * its first failure in the history) and come after `redriveCount` redrives. */
export function historyComplete(events: HistoryEvent[], status?: string, redriveCount = 0): boolean {
  let end: string | null = null;
  let redrives = 0;
  for (const e of events) {
    if (e.type === "ExecutionRedriven") {
      end = null;
      redrives++;
    } else if (ENDS.has(e.type)) end = e.type;
  }
  if (end === null || redrives < redriveCount) return false;
  const expected = status && status in END_OF ? END_OF[status as keyof typeof END_OF] : undefined;
  return expected === undefined || end === expected;
}
