import { describe, expect, it } from "vitest";
import type { HistoryEvent, HistoryEventType } from "../api";
import {
  callbackOf,
  failedState,
  failureOrigin,
  historyComplete,
  logLinesFor,
  nodeStatuses,
  pathTag,
  statusLabel,
  timelineRows,
  withoutTags,
} from "./history";

const ev = (type: HistoryEventType, at_ms: number, state: string | null, path = "", extra: Record<string, unknown> = {}): HistoryEvent => ({
  type, at_ms, execution_id: "x", state, path, ...extra,
});

// An ASL run: Validate ok, a Parallel "Fan" whose branch 1 state "Charge" fails and is
// caught on the Parallel, then "Rejected" fails the execution; "Never" does not run.
const aslFailed: HistoryEvent[] = [
  ev("ExecutionStarted", 1000, null, "", { input: { a: 1 } }),
  ev("StateEntered", 1001, "Validate", "", { input: { a: 1 } }),
  ev("TaskScheduled", 1002, "Validate", "", { grain: "validate", input: { a: 1 } }),
  ev("TaskStarted", 1003, "Validate", "", { grain: "validate", host: "host-1", pid: 42, attempt: 1 }),
  ev("TaskSucceeded", 1010, "Validate", "", { output: { ok: true }, duration_ms: 7 }),
  ev("StateExited", 1011, "Validate", "", { output: { ok: true }, next: "Fan" }),
  ev("StateEntered", 1012, "Fan", "", { input: { ok: true } }),
  ev("ParallelStarted", 1012, "Fan", "", { branches: 2 }),
  ev("StateEntered", 1013, "Charge", "Fan[1]", { input: {} }),
  ev("TaskStarted", 1014, "Charge", "Fan[1]", { grain: "charge", host: "host-1", pid: 43 }),
  ev("TaskFailed", 1020, "Charge", "Fan[1]", { error: "CardDeclined", cause: "no money", duration_ms: 6 }),
  ev("StateFailed", 1021, "Charge", "Fan[1]", { error: "CardDeclined", cause: "no money" }),
  ev("BranchFailed", 1021, null, "Fan[1]", { error: "CardDeclined", cause: "no money" }),
  ev("Caught", 1022, "Fan", "", { error: "CardDeclined", cause: "no money", next: "Rejected" }),
  ev("StateEntered", 1023, "Rejected", "", { input: {} }),
  ev("StateFailed", 1024, "Rejected", "", { error: "OrderRejected", cause: "card declined" }),
  ev("ExecutionFailed", 1024, null, "", { error: "OrderRejected", cause: "card declined" }),
];

describe("nodeStatuses", () => {
  it("colours each state by its outcome over all its entries", () => {
    const s = nodeStatuses(aslFailed);
    expect(s).toEqual({ Validate: "succeeded", Fan: "caught", Charge: "failed", Rejected: "failed" });
    expect(s.Never).toBeUndefined(); // not-run is the graph's default
  });

  it("a retried task that then succeeds is succeeded, not failed (ASL: the state events decide)", () => {
    const s = nodeStatuses([
      ev("StateEntered", 1, "Price", "Each[0]"),
      ev("TaskFailed", 2, "Price", "Each[0]", { error: "Busy" }),
      ev("RetryScheduled", 3, "Price", "Each[0]"),
      ev("TaskSucceeded", 4, "Price", "Each[0]"),
      ev("StateExited", 5, "Price", "Each[0]"),
    ]);
    expect(s.Price).toBe("succeeded");
  });

  it("a Retry re-enters the state: the failed attempt ends its entry (seen on the real stack)", () => {
    const events = [
      ev("StateEntered", 1, "PriceItem", "P[2]"),
      ev("TaskStarted", 2, "PriceItem", "P[2]", { grain: "price" }),
      ev("TaskFailed", 3, "PriceItem", "P[2]", { error: "Busy", cause: "try later" }),
      ev("RetryScheduled", 4, "PriceItem", "P[2]", { error: "Busy", cause: "try later", delay_s: 1 }),
      ev("StateEntered", 10, "PriceItem", "P[2]"),
      ev("TaskStarted", 11, "PriceItem", "P[2]", { grain: "price" }),
      ev("TaskSucceeded", 12, "PriceItem", "P[2]"),
      ev("StateExited", 13, "PriceItem", "P[2]"),
    ];
    expect(nodeStatuses(events)).toEqual({ PriceItem: "succeeded" });
    expect(timelineRows(events).map((r) => [r.kind, r.status, r.error])).toEqual([
      ["state", "retried", "Busy"],
      ["task", "failed", "Busy"],
      ["state", "succeeded", null],
      ["task", "succeeded", null],
    ]);
  });

  it("a state entered and not left is running; one failure among Map items makes it failed", () => {
    const s = nodeStatuses([
      ev("StateEntered", 1, "Wait1", ""),
      ev("StateEntered", 1, "Item", "M[0]"),
      ev("StateExited", 2, "Item", "M[0]"),
      ev("StateEntered", 1, "Item", "M[1]"),
      ev("StateFailed", 3, "Item", "M[1]", { error: "E" }),
    ]);
    expect(s.Wait1).toBe("running");
    expect(s.Item).toBe("failed");
  });

  it("native workflows (no StateEntered) are coloured from task events", () => {
    const s = nodeStatuses([
      ev("TaskScheduled", 1, "split", "", { grain: "split" }),
      ev("TaskSucceeded", 2, "split", ""),
      ev("TaskScheduled", 3, "words", ""),
      ev("TaskFailed", 4, "words", "", { error: "States.TaskFailed" }),
      ev("TaskScheduled", 3, "letters", ""),
    ]);
    expect(s).toEqual({ split: "succeeded", words: "failed", letters: "running" });
  });
});

describe("timelineRows", () => {
  it("has one row per state entry and per grain instance, with offsets, hosts and durations", () => {
    const rows = timelineRows(aslFailed);
    expect(rows.map((r) => [r.kind, r.state, r.path, r.status])).toEqual([
      ["state", "Validate", "", "succeeded"],
      ["task", "Validate", "", "succeeded"],
      ["state", "Fan", "", "caught"],
      ["state", "Charge", "Fan[1]", "failed"],
      ["task", "Charge", "Fan[1]", "failed"],
      ["state", "Rejected", "", "failed"],
    ]);
    const task = rows[1];
    expect(task).toMatchObject({ grain: "validate", host: "host-1", pid: 42, offsetMs: 3, durationMs: 7, input: { a: 1 }, output: { ok: true } });
    expect(rows[0]).toMatchObject({ offsetMs: 1, durationMs: 10, output: { ok: true } });
    expect(rows[4]).toMatchObject({ error: "CardDeclined", cause: "no money", durationMs: 6 });
  });

  it("matches repeated entries of one state in order, and leaves an open one running", () => {
    const rows = timelineRows([
      ev("StateEntered", 0, "Loop", ""),
      ev("StateExited", 5, "Loop", ""),
      ev("StateEntered", 6, "Loop", ""),
    ]);
    expect(rows.map((r) => [r.offsetMs, r.durationMs, r.status])).toEqual([
      [0, 5, "succeeded"],
      [6, null, "running"],
    ]);
  });

  it("is empty without events", () => {
    expect(timelineRows([])).toEqual([]);
  });
});

describe("failedState", () => {
  it("names the top-level state that failed the execution, with its error and cause", () => {
    expect(failedState(aslFailed)).toEqual({ state: "Rejected", path: "", error: "OrderRejected", cause: "card declined" });
  });
  it("falls back to the failed task of a native workflow, and is null when nothing failed", () => {
    expect(failedState([ev("TaskFailed", 1, "words", "", { error: "E", cause: "c" })])?.state).toBe("words");
    expect(failedState(aslFailed.slice(0, 6))).toBeNull();
  });
});

describe("logLinesFor", () => {
  it("keeps the lines tagged with one execution and grain, with their traceback; untagged output apart", () => {
    const logs = [
      "[agent] 2026-11-24T09:54:54Z deployed version 1",
      "grain=greet msg='worker ready' pid=3",
      "greeting Grace",
      "12:00 INFO execution_id=abc grain=greet hello",
      "execution=abc grain=shout error=RuntimeError",
      "Traceback (most recent call last):",
      '  File "shout.py", line 3, in handle',
      "RuntimeError: boom",
      "",
      "execution=zzz grain=greet error=ValueError",
      "  File x",
    ].join("\n");
    expect(logLinesFor(logs, "abc", "greet")).toEqual({
      tagged: ["12:00 INFO execution_id=abc grain=greet hello"],
      untagged: ["greeting Grace"],
    });
    expect(logLinesFor(logs, "abc", "shout").tagged).toEqual([
      "execution=abc grain=shout error=RuntimeError",
      "Traceback (most recent call last):",
      '  File "shout.py", line 3, in handle',
      "RuntimeError: boom",
    ]);
    expect(logLinesFor(logs, "abc", null).tagged).toHaveLength(5);
    // A grain whose name begins another's is not confused with it.
    expect(logLinesFor("execution_id=abc grain=shouter loud\n", "abc", "shout").tagged).toEqual([]);
    expect(logLinesFor("execution_id=abc grain=shout loud", "abc", "shout").tagged).toEqual([
      "execution_id=abc grain=shout loud",
    ]);
  });

  it("keeps a traceback the worker tagged on every line, whatever its last line says", () => {
    // Since issue 24 every line of a grain's traceback carries the tags of its prints, so a
    // last line the continuation rule would not know (a grain's own exception class) stays.
    const tag = "execution_id=abc grain=price ";
    const logs = [
      `${tag}level=INFO price b run 1`,
      "execution_id=zzz grain=price level=INFO price a run 1",
      `${tag}error=OrderRejected`,
      `${tag}Traceback (most recent call last):`,
      `${tag}  File "price.py", line 9, in handle`,
      "execution_id=zzz grain=price level=INFO interleaved",
      `${tag}OrderRejected: sku b has no price`,
    ].join("\n");
    expect(logLinesFor(logs, "abc", "price")).toEqual({
      tagged: [
        `${tag}level=INFO price b run 1`,
        `${tag}error=OrderRejected`,
        `${tag}Traceback (most recent call last):`,
        `${tag}  File "price.py", line 9, in handle`,
        `${tag}OrderRejected: sku b has no price`,
      ],
      untagged: [],
    });
  });
});

describe("logLinesFor with a path", () => {
  it("keeps one Map item's lines, not its siblings' nor the top level's", () => {
    const logs = [
      "execution_id=abc grain=price path=PriceItems[0] level=INFO price a",
      "execution_id=abc grain=price path=PriceItems[1] level=INFO price b",
      "execution_id=abc grain=price path=PriceItems[1] Traceback (most recent call last):",
      "execution_id=abc grain=price path=PriceItems[10] level=INFO price k",
      "execution_id=abc grain=price level=INFO top level path=/tmp",
      "execution_id=abc grain=price path=Outer%20Map[2]/PriceItems[1] level=INFO nested",
    ].join("\n");
    expect(logLinesFor(logs, "abc", "price", "PriceItems[1]").tagged).toEqual([
      "execution_id=abc grain=price path=PriceItems[1] level=INFO price b",
      "execution_id=abc grain=price path=PriceItems[1] Traceback (most recent call last):",
    ]);
    expect(logLinesFor(logs, "abc", "price", "").tagged).toEqual([
      "execution_id=abc grain=price level=INFO top level path=/tmp",
    ]);
    expect(logLinesFor(logs, "abc", "price", "Outer Map[2]/PriceItems[1]").tagged).toEqual([
      "execution_id=abc grain=price path=Outer%20Map[2]/PriceItems[1] level=INFO nested",
    ]);
    expect(logLinesFor(logs, "abc", "price", null).tagged).toHaveLength(6);
  });

  it("shows a line without the tags that put it in the panel", () => {
    expect(withoutTags("execution_id=abc grain=price path=Each[1] level=INFO price b")).toBe("level=INFO price b");
    expect(withoutTags("execution_id=abc grain=price Traceback (most recent call last):")).toBe(
      "Traceback (most recent call last):",
    );
    expect(withoutTags("12:00 INFO execution_id=abc grain=greet hello")).toBe("12:00 INFO execution_id=abc grain=greet hello");
  });

  it("writes a path as one word, as the worker does", () => {
    expect(pathTag("Price Items[0]/a%b\tc[1]")).toBe("Price%20Items[0]/a%25b%09c[1]");
  });
});

describe("after a redrive", () => {
  it("the state that failed and ran again shows its new outcome; the others keep theirs", () => {
    const events = [
      ev("StateEntered", 1, "Prepare", ""),
      ev("StateExited", 2, "Prepare", ""),
      ev("StateEntered", 3, "Flaky", ""),
      ev("StateFailed", 4, "Flaky", "", { error: "RuntimeError" }),
      ev("ExecutionFailed", 4, null, ""),
      ev("ExecutionRedriven", 10, null, ""),
      ev("StateEntered", 11, "Flaky", ""),
      ev("StateExited", 12, "Flaky", ""),
      ev("StateEntered", 13, "Done", ""),
      ev("StateExited", 14, "Done", ""),
    ];
    expect(nodeStatuses(events)).toEqual({ Prepare: "succeeded", Flaky: "succeeded", Done: "succeeded" });
    expect(nodeStatuses(events.slice(0, 5))).toEqual({ Prepare: "succeeded", Flaky: "failed" });
  });

  it("a state row without a host takes its grain instance's", () => {
    const rows = timelineRows([
      ev("StateEntered", 1, "Greet", ""),
      ev("TaskStarted", 2, "Greet", "", { grain: "greet", host: "host-1", pid: 7 }),
      ev("TaskSucceeded", 3, "Greet", ""),
      ev("StateExited", 4, "Greet", ""),
    ]);
    expect(rows[0]).toMatchObject({ kind: "state", host: "host-1", pid: 7 });
  });
});

describe("historyComplete", () => {
  it("is true once the end is recorded, and false again after a redrive until its new end", () => {
    expect(historyComplete([])).toBe(false);
    expect(historyComplete(aslFailed.slice(0, 10))).toBe(false);
    expect(historyComplete(aslFailed)).toBe(true);
    expect(historyComplete(aslFailed, "FAILED")).toBe(true);
    expect(historyComplete([...aslFailed, ev("ExecutionRedriven", 2000, null)])).toBe(false);
    // The record says redriven once, the history has not recorded the redrive yet.
    expect(historyComplete(aslFailed, "FAILED", 1)).toBe(false);
    const again = [...aslFailed, ev("ExecutionRedriven", 2000, null), ev("ExecutionFailed", 2001, null)];
    expect(historyComplete(again, "FAILED", 1)).toBe(true);
  });
  it("is false while the recorded end is not the one the record says (the redrive's events are late)", () => {
    expect(historyComplete(aslFailed, "SUCCEEDED")).toBe(false);
    const redriven = [...aslFailed, ev("ExecutionRedriven", 2000, null), ev("ExecutionSucceeded", 2001, null)];
    expect(historyComplete(redriven, "SUCCEEDED")).toBe(true);
  });
});

// Issue 24: a Map whose item 0 failed the execution while item 1 still ran, then a redrive
// that enters the Map again.
const mapFailedThenRedriven: HistoryEvent[] = [
  ev("ExecutionStarted", 2000, null, "", { input: {} }),
  ev("StateEntered", 2001, "PriceItems", "", { input: {} }),
  ev("MapStarted", 2001, "PriceItems", "", { items: 2 }),
  ev("StateEntered", 2002, "Price", "PriceItems[0]", { input: {} }),
  ev("TaskStarted", 2003, "Price", "PriceItems[0]", { grain: "price" }),
  ev("StateEntered", 2002, "Slow", "PriceItems[1]", { input: {} }),
  ev("TaskStarted", 2003, "Slow", "PriceItems[1]", { grain: "slow" }),
  ev("TaskFailed", 2010, "Price", "PriceItems[0]", { error: "ValueError", cause: "no price" }),
  ev("StateFailed", 2010, "Price", "PriceItems[0]", { error: "ValueError", cause: "no price" }),
  ev("StateFailed", 2011, "PriceItems", "", { error: "ValueError", cause: "no price" }),
  ev("ExecutionFailed", 2012, null, "", { error: "ValueError", cause: "no price" }),
];
const redrive: HistoryEvent[] = [
  ev("ExecutionRedriven", 5000, null, "", { from_state: "PriceItems", redrive_count: 1, input: {} }),
  ev("StateEntered", 5001, "PriceItems", "", { input: {} }),
  ev("StateEntered", 5002, "Slow", "PriceItems[1]", { input: {} }),
];

describe("an ended run's open work", () => {
  it("is cancelled, not running, once its run ended; running again in a redrive", () => {
    expect(nodeStatuses(mapFailedThenRedriven)).toMatchObject({
      PriceItems: "failed",
      Price: "failed",
      Slow: "cancelled",
    });
    const rows = timelineRows(mapFailedThenRedriven);
    expect(rows.some((r) => r.status === "running")).toBe(false);
    const slow = rows.filter((r) => r.path === "PriceItems[1]");
    expect(slow.map((r) => [r.kind, r.status, r.durationMs])).toEqual([
      ["state", "cancelled", 10],
      ["task", "cancelled", 9],
    ]);
    const redriven = [...mapFailedThenRedriven, ...redrive];
    expect(nodeStatuses(redriven)).toMatchObject({ PriceItems: "running", Slow: "running" });
  });

  it("gives a cancelled instance that ran on its real outcome, marked after the end, even once a redrive runs it again", () => {
    const again = ev("TaskStarted", 5003, "Slow", "PriceItems[1]", { grain: "slow" });
    // the first run's instance ends 7 s after it started, during the redrive
    const late = ev("TaskSucceeded", 9003, "Slow", "PriceItems[1]", { duration_ms: 7000, output: { ok: 1 } });
    const rows = timelineRows([...mapFailedThenRedriven, ...redrive, again, late]);
    const slow = rows.filter((r) => r.path === "PriceItems[1]" && r.kind === "task");
    expect(slow.map((r) => [r.startMs, r.status, r.durationMs, r.afterEnd ?? false])).toEqual([
      [2003, "succeeded", 7000, true],
      [5003, "running", null, false],
    ]);
    expect(slow[0]?.output).toEqual({ ok: 1 });
    // the state's entry stays cancelled: its output was not used
    expect(rows.find((r) => r.path === "PriceItems[1]" && r.kind === "state")?.status).toBe("cancelled");
  });

  it("marks an instance that started only after its run ended, running or not", () => {
    const started = ev("TaskStarted", 2020, "Slow", "PriceItems[1]", { grain: "slow", attempt: 0 });
    const [first] = timelineRows([...mapFailedThenRedriven, started]).filter((r) => r.startMs === 2020);
    expect(first).toMatchObject({ kind: "task", status: "running", afterEnd: true });
    const done = ev("TaskSucceeded", 2520, "Slow", "PriceItems[1]", { duration_ms: 500 });
    const [ended] = timelineRows([...mapFailedThenRedriven, started, done]).filter((r) => r.startMs === 2020);
    expect(ended).toMatchObject({ status: "succeeded", durationMs: 500, afterEnd: true });
  });

  it("starts the failure at the item's task, not at the Map it failed", () => {
    expect(failedState(mapFailedThenRedriven)).toMatchObject({ state: "PriceItems", path: "" });
    expect(failureOrigin(mapFailedThenRedriven)).toEqual({
      state: "Price",
      path: "PriceItems[0]",
      error: "ValueError",
      cause: "no price",
    });
    expect(failureOrigin(aslFailed)).toMatchObject({ state: "Rejected", path: "" });
  });

  it("shows each redrive as a row of its own, at its time", () => {
    const rows = timelineRows([...mapFailedThenRedriven, ...redrive]);
    const marker = rows.find((r) => r.kind === "redrive");
    expect(marker).toMatchObject({ state: "PriceItems", attempt: 1, status: "redriven", offsetMs: 3000 });
    expect(rows.indexOf(marker!)).toBe(rows.findIndex((r) => r.startMs >= 5000));
  });
});

// Issue 23: a Task whose Resource is `approve.waitForTaskToken` ran its grain, which
// handed the token on; the state waits until someone sends its result.
const TOKEN = "c2hvcApleGVjLTEKZXhlYy0xL0FwcHJvdmUjMQ.c2lnbmF0dXJl";
const submitted = (at: number, path = "", token = TOKEN) =>
  ev("TaskSubmitted", at, "Approve", path, {
    grain: "approve",
    output: { sent_to: "ops" },
    task_token: token,
    timeout_at: 90_000,
    heartbeat_s: 60,
  });
const waiting: HistoryEvent[] = [
  ev("ExecutionStarted", 1000, null, "", { input: { order: 7 } }),
  ev("StateEntered", 1001, "Approve", "", { input: { order: 7 } }),
  ev("TaskScheduled", 1002, "Approve", "", { grain: "approve", input: { order: 7 } }),
  ev("TaskStarted", 1003, "Approve", "", { grain: "approve", host: "host-1", pid: 42, attempt: 1 }),
  submitted(1010),
];
const wait = { token: TOKEN, grain: "approve", timeoutAtMs: 90_000, heartbeatS: 60 };

describe("a Task waiting for a callback", () => {
  it("is waiting, not running, with its token, until a result, failure or timeout ends the wait", () => {
    expect(nodeStatuses(waiting)).toEqual({ Approve: "waiting" });
    const rows = timelineRows(waiting);
    expect(rows.map((r) => [r.kind, r.status, r.durationMs])).toEqual([
      ["state", "waiting", null],
      ["task", "waiting", null],
    ]);
    expect(rows[0]?.callback).toEqual(wait);
    expect(rows[1]).toMatchObject({ grain: "approve", host: "host-1", callback: wait, output: { sent_to: "ops" } });
    for (const end of ["TaskSucceeded", "TaskFailed", "TaskTimedOut"] as const) {
      const after = [...waiting, ev(end, 5000, "Approve", "", { error: "States.Timeout" })];
      expect(nodeStatuses(after)).toEqual({ Approve: "running" }); // the state's own end follows
      expect(timelineRows(after).map((r) => r.status)).toEqual([
        "running",
        end === "TaskSucceeded" ? "succeeded" : "failed",
      ]);
    }
  });

  it("ends with its state: succeeded after the result, failed after a timeout that was not caught", () => {
    const done = [
      ...waiting,
      ev("TaskSucceeded", 5000, "Approve", "", { output: { approved: true } }),
      ev("StateExited", 5001, "Approve", "", { output: { approved: true } }),
    ];
    expect(nodeStatuses(done)).toEqual({ Approve: "succeeded" });
    expect(timelineRows(done)[1]).toMatchObject({ status: "succeeded", output: { approved: true }, durationMs: 3997 });
    const timedOut = [
      ...waiting,
      ev("TaskTimedOut", 90_000, "Approve", "", { error: "States.Timeout", cause: "no callback in 88 s" }),
      ev("StateFailed", 90_001, "Approve", "", { error: "States.Timeout", cause: "no callback in 88 s" }),
      ev("ExecutionFailed", 90_002, null, ""),
    ];
    expect(nodeStatuses(timedOut)).toEqual({ Approve: "failed" });
    expect(timelineRows(timedOut)[1]).toMatchObject({ status: "failed", error: "States.Timeout" });
  });

  it("is cancelled when the execution is stopped while it waits", () => {
    const stopped = [...waiting, ev("ExecutionAborted", 3000, null, "")];
    expect(nodeStatuses(stopped)).toEqual({ Approve: "cancelled" });
    expect(timelineRows(stopped).map((r) => r.status)).toEqual(["cancelled", "cancelled"]);
  });

  it("in a Map, waits only when every open item waits; each item's row has its own token", () => {
    const items = [
      ev("StateEntered", 1, "Approve", "Each[0]"),
      ev("TaskStarted", 2, "Approve", "Each[0]", { grain: "approve" }),
      ev("StateEntered", 1, "Approve", "Each[1]"),
      ev("TaskStarted", 2, "Approve", "Each[1]", { grain: "approve" }),
      submitted(3, "Each[0]", "token-0"),
    ];
    expect(nodeStatuses(items)).toEqual({ Approve: "running" }); // item 1's grain still runs
    const both = [...items, submitted(4, "Each[1]", "token-1")];
    expect(nodeStatuses(both)).toEqual({ Approve: "waiting" });
    const tokens = timelineRows(both)
      .filter((r) => r.kind === "task")
      .map((r) => [r.path, r.status, r.callback?.token]);
    expect(tokens).toEqual([
      ["Each[0]", "waiting", "token-0"],
      ["Each[1]", "waiting", "token-1"],
    ]);
  });

  it("has a row of its own when the grain's instance was closed as it returned", () => {
    const rows = timelineRows([
      ev("StateEntered", 1, "Approve", ""),
      ev("TaskStarted", 2, "Approve", "", { grain: "approve" }),
      ev("TaskSucceeded", 3, "Approve", "", { output: null }),
      submitted(4),
    ]);
    expect(rows.map((r) => [r.kind, r.status, r.callback?.token ?? null])).toEqual([
      ["state", "waiting", TOKEN],
      ["task", "succeeded", null],
      ["task", "waiting", TOKEN],
    ]);
  });

  it("reads the wait from its event: no token, no wait; a missing timeout or heartbeat is null", () => {
    expect(callbackOf(ev("TaskSubmitted", 1, "A", "", { grain: "a" }))).toBeNull();
    expect(callbackOf(ev("TaskSubmitted", 1, "A", "", { task_token: "t", heartbeat_s: 0 }))).toEqual({
      token: "t",
      grain: null,
      timeoutAtMs: null,
      heartbeatS: null,
    });
    expect(statusLabel("waiting")).toBe("waiting for a callback");
    expect(statusLabel("running")).toBe("running");
  });
});
