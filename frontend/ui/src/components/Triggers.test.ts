import { createElement as h, isValidElement, type ReactElement, type ReactNode } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { StaticRouter } from "react-router-dom/server";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { TOKEN_KEY, type ExecutionTrigger, type Trigger } from "../api";
import { toggleTrigger, withTrigger } from "../lib/triggers";
import { TriggerOrigin, TriggerTable, TriggersView } from "./Triggers";

// The tests render to HTML on the server side (the suite runs in node, without a DOM); a
// button is "clicked" by calling the onClick of the element that draws it.

const NIGHTLY: Trigger = {
  name: "nightly",
  kind: "schedule",
  schedule: "cron(0 3 * * 1-5)",
  timezone: "Europe/Paris",
  workflow: "main",
  input: { report: "daily" },
  missed: "run_once",
  paused: false,
  paused_at: null,
  next_firing: "2026-11-30T02:00:00Z",
  last_firing: { time: "2026-11-27T02:00:00Z", execution_id: "3f2a9c0d1e2b4a5f" },
};
const ORDERS: Trigger = {
  name: "orders",
  kind: "topic",
  topic: "orders",
  workflow: "main",
  paused: false,
  paused_at: null,
  lag: 12,
};
const TICK: Trigger = {
  name: "tick",
  kind: "schedule",
  schedule: "rate(5 minutes)",
  timezone: "UTC",
  workflow: "report",
  input: {},
  missed: "run_once",
  paused: true,
  paused_at: "2026-11-27T10:00:00Z",
  next_firing: null,
  last_firing: null,
};

/** The HTML of `node`, under a router (the rows link to executions). */
function html(node: ReactElement): string {
  return renderToStaticMarkup(h(StaticRouter, { location: "/apps/shop" }, node));
}

/** The text a reader sees in `markup`: tags dropped, entities of the text decoded. */
function text(markup: string): string {
  return markup
    .replace(/<[^>]*>/g, "")
    .replace(/&#x27;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, "&");
}

/** The element whose data-testid is `testId` in what `node` draws, expanding the function
 * components it holds (the hook-free ones of this module; a router's Link is left whole). */
function find(node: ReactNode, testId: string): ReactElement<Record<string, unknown>> | null {
  if (Array.isArray(node)) {
    for (const child of node) {
      const found = find(child as ReactNode, testId);
      if (found) return found;
    }
    return null;
  }
  if (!isValidElement<Record<string, unknown>>(node)) return null;
  if (node.props["data-testid"] === testId) return node;
  if (typeof node.type === "function") {
    return find((node.type as (props: unknown) => ReactNode)(node.props), testId);
  }
  return find(node.props.children as ReactNode, testId);
}

/** The row of trigger `name`, drawn alone (in its table, so that the HTML is well formed). */
function row(table: ReactElement, name: string): string {
  const tr = find(table, `trigger-row-${name}`);
  expect(tr, `no row for ${name}`).not.toBeNull();
  return html(h("table", null, h("tbody", null, tr)));
}

/** The text of the cell `testId` of trigger `name`'s row. */
function cell(table: ReactElement, name: string, testId: string): string {
  const td = find(find(table, `trigger-row-${name}`), testId);
  expect(td, `no ${testId} for ${name}`).not.toBeNull();
  return text(html(h("table", null, h("tbody", null, h("tr", null, td)))));
}

const table = (triggers: Trigger[], onToggle: (t: Trigger) => void = () => {}, busy: string | null = null) =>
  h(TriggerTable, { triggers, busy, onToggle });

// Local times are the browser's: the tests' zone is Paris (CET in November, UTC+1).
const zone = process.env.TZ;
beforeAll(() => {
  process.env.TZ = "Europe/Paris";
});
afterAll(() => {
  if (zone === undefined) delete process.env.TZ;
  else process.env.TZ = zone;
});

describe("the triggers list", () => {
  it("shows a schedule's spec with its zone, its workflow, Active, its next firing in local time with the UTC in the tooltip", () => {
    const nightly = row(table([NIGHTLY, ORDERS]), "nightly");
    expect(text(nightly)).toContain("cron(0 3 * * 1-5) Europe/Paris");
    expect(find(table([NIGHTLY]), "trigger-kind")?.props.children).toBe("schedule");
    expect(find(table([NIGHTLY]), "trigger-workflow")?.props.children).toBe("main");
    expect(text(nightly)).toContain("Active");
    expect(nightly).toContain('title="2026-11-30 02:00:00 UTC"');
    expect(text(nightly)).toContain("2026-11-30 03:00:00 CET");
  });

  it("links a schedule's last firing to the execution it started", () => {
    const nightly = row(table([NIGHTLY]), "nightly");
    expect(nightly).toMatch(/<a href="\/executions\/3f2a9c0d1e2b4a5f"><span title="2026-11-27 02:00:00 UTC">2026-11-27 03:00:00 CET/);
  });

  it("shows a topic trigger's topic and its lag instead of a next firing", () => {
    const orders = row(table([NIGHTLY, ORDERS]), "orders");
    expect(text(orders)).toContain("topic orders");
    expect(text(orders)).toContain("12 records waiting");
    expect(cell(table([ORDERS]), "orders", "trigger-last")).toBe("—"); // its lag says how it keeps up
    expect(text(orders)).toContain("Pause");
  });

  it("shows a paused schedule as Paused, without a next firing, with a Resume button; a rate names no zone", () => {
    const tick = row(table([TICK]), "tick");
    expect(text(tick)).toContain("rate(5 minutes)");
    expect(text(tick)).not.toContain("rate(5 minutes) UTC");
    expect(find(table([TICK]), "trigger-state")?.props.children).toBe("Paused");
    expect(text(tick)).toContain("— (paused)");
    expect(find(table([TICK]), "trigger-toggle")?.props.children).toBe("Resume");
  });

  it("holds the button of the trigger being changed", () => {
    const button = find(table([NIGHTLY], () => {}, "nightly"), "trigger-toggle");
    expect(button?.props.disabled).toBe(true);
    expect(button?.props.children).toBe("Pausing…");
  });
});

describe("the section", () => {
  const view = (triggers: Trigger[] | null, loadError: unknown = null, actionError: unknown = null) =>
    html(
      h(TriggersView, {
        triggers,
        loadError,
        actionError,
        busy: null,
        onToggle: () => {},
        onRefresh: () => {},
        onDismiss: () => {},
      }),
    );

  it("of an app without triggers says how to declare them in app.yaml, with no link", () => {
    const markup = view([]);
    expect(markup).toContain('data-testid="triggers-empty"');
    expect(text(markup)).toContain("triggers:");
    expect(text(markup)).toContain("app.yaml");
    expect(text(markup)).toMatch(/nightly: \{schedule: "cron\(0 3 \* \* 1-5\)"/);
    expect(markup).not.toContain("<a ");
    expect(markup).not.toContain("triggers-table");
  });

  it("shows its table when there are triggers, and its errors inline", () => {
    const markup = view([NIGHTLY, ORDERS], null, new Error("no trigger 'x' in app 'shop' (it has: nightly, orders)"));
    expect(markup).toContain('data-testid="triggers-table"');
    expect(markup).not.toContain("triggers-empty");
    expect(text(markup)).toContain("no trigger 'x' in app 'shop' (it has: nightly, orders)");
  });

  it("says it loads, then why it could not", () => {
    expect(text(view(null))).toContain("Loading the triggers");
    const failed = view(null, new Error("no application 'shop' is deployed"));
    expect(text(failed)).toContain("no application 'shop' is deployed");
    expect(text(failed)).not.toContain("Loading");
  });
});

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
}

/** fetch answering each request with the next of `answers` (status 200), recording it. */
function serve(...answers: unknown[]): Sent[] {
  const sent: Sent[] = [];
  vi.stubGlobal("fetch", (url: string, init: RequestInit) => {
    sent.push({ url, method: init.method ?? "GET", headers: init.headers as Record<string, string> });
    const body = answers.shift();
    return Promise.resolve(new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } }));
  });
  return sent;
}

describe("the Pause / Resume button", () => {
  beforeEach(() => {
    const store = new Map<string, string>([[TOKEN_KEY, "sand_user-token"]]);
    vi.stubGlobal("sessionStorage", {
      getItem: (k: string) => store.get(k) ?? null,
      setItem: (k: string, v: string) => store.set(k, v),
      removeItem: (k: string) => store.delete(k),
    });
  });
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  /** What the section does with a click: the change on the server, its answer in the list. */
  async function click(list: Trigger[], name: string): Promise<Trigger[]> {
    let pressed: Trigger | null = null;
    const button = find(
      table(list, (t) => (pressed = t)),
      `trigger-row-${name}`,
    );
    const toggle = find(button, "trigger-toggle");
    (toggle?.props.onClick as () => void)();
    expect(pressed).not.toBeNull();
    return withTrigger(list, await toggleTrigger("shop", pressed as unknown as Trigger));
  }

  it("pauses an active trigger with POST .../pause, and its row shows the answer: Paused, Resume", async () => {
    const paused = { ...NIGHTLY, paused: true, paused_at: "2026-11-27T11:00:00Z", next_firing: null };
    const sent = serve(paused);
    const after = await click([NIGHTLY, ORDERS], "nightly");
    expect(sent).toEqual([
      {
        url: "/v1/apps/shop/triggers/nightly/pause",
        method: "POST",
        headers: { Authorization: "Bearer sand_user-token" },
      },
    ]);
    const nightly = row(table(after), "nightly");
    expect(find(table(after), "trigger-state")?.props.children).toBe("Paused");
    expect(nightly).toContain('title="paused 2026-11-27 11:00:00 UTC"');
    expect(text(nightly)).toContain("Resume");
    expect(text(row(table(after), "orders"))).toContain("Active"); // the other one is untouched
  });

  it("resumes a paused trigger with POST .../resume", async () => {
    const sent = serve({ ...TICK, paused: false, paused_at: null, next_firing: "2026-11-27T11:05:00Z" });
    const after = await click([TICK], "tick");
    expect(sent.map((s) => [s.method, s.url])).toEqual([["POST", "/v1/apps/shop/triggers/tick/resume"]]);
    expect(find(table(after), "trigger-state")?.props.children).toBe("Active");
    expect(find(table(after), "trigger-toggle")?.props.children).toBe("Pause");
  });
});

describe("the execution page's trigger line", () => {
  const line = (trigger: ExecutionTrigger) => html(h(TriggerOrigin, { trigger }));

  it("names a schedule and its firing time, local, with the UTC in the tooltip", () => {
    const markup = line({ name: "nightly", kind: "schedule", time: "2026-11-27T02:00:00Z" });
    expect(text(markup)).toBe("Started by trigger nightly (schedule, 2026-11-27 03:00:00 CET)");
    expect(markup).toContain('title="2026-11-27 02:00:00 UTC"');
  });

  it("names a topic record's topic, partition and offset", () => {
    const markup = line({ name: "orders", kind: "topic", topic: "orders", partition: 0, offset: 17 });
    expect(text(markup)).toBe("Started by trigger orders (topic orders, partition 0, offset 17)");
  });
});
