import { createElement as h, type ReactElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { TOKEN_KEY } from "../api";
import type { CallbackWait } from "../lib/history";
import { HeartbeatAnswer, HeartbeatButton, TaskCallback, heartbeat, type CallbackAnswer } from "./TaskCallback";

// The tests render to HTML on the server side (the suite runs in node, without a DOM); a
// button is "clicked" by calling the onClick of the element that draws it, and what the
// panel keeps between renders is handed to its hook-free parts by hand.

const TASK_TOKEN = "c2hvcApleGVjLTEKZXhlYy0xL0FwcHJvdmUjMQ.c2lnbmF0dXJl";
const WAIT: CallbackWait = { token: TASK_TOKEN, grain: "ask", timeoutAtMs: null, heartbeatS: 60 };
// 2026-11-27 10:04:05 UTC: 11:04:05 in the tests' zone (Paris, CET in November)
const SENT_AT_MS = Date.UTC(2026, 10, 27, 10, 4, 5);

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

/** fetch answering `status` with `body`, recording each request; a signed-in session. */
function serve(status: number, body: unknown): Sent[] {
  const sent: Sent[] = [];
  vi.stubGlobal("fetch", (url: string, init: RequestInit) => {
    sent.push({ url, method: init.method ?? "GET", headers: init.headers as Record<string, string>, body: init.body });
    return Promise.resolve(
      new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } }),
    );
  });
  return sent;
}

/** The text a reader sees in `markup`: tags dropped, entities of the text decoded. */
function text(markup: string): string {
  return markup
    .replace(/<[^>]*>/g, "")
    .replace(/&#x27;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, "&");
}

/** What the panel's Send heartbeat does with a click, its answer drawn as the panel draws it:
 * the button's handler runs `heartbeat`, whose result the panel keeps and shows. */
async function click(onAnswer: (a: CallbackAnswer) => void = () => {}): Promise<string> {
  let shown: Awaited<ReturnType<typeof heartbeat>> = null;
  let sending: Promise<void> | null = null;
  const button = HeartbeatButton({
    sending: false,
    onSend: () => {
      sending = heartbeat(TASK_TOKEN, onAnswer, () => SENT_AT_MS).then((s) => {
        shown = s;
      });
    },
  }) as ReactElement<{ onClick: () => void }>;
  button.props.onClick();
  expect(sending).not.toBeNull();
  await sending;
  return renderToStaticMarkup(h(HeartbeatAnswer, { shown }));
}

const zone = process.env.TZ;
beforeAll(() => {
  process.env.TZ = "Europe/Paris";
});
afterAll(() => {
  if (zone === undefined) delete process.env.TZ;
  else process.env.TZ = zone;
});
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

describe("the Send heartbeat button", () => {
  it("stands beside Send success and Send failure, ready, with nothing said yet", () => {
    const markup = renderToStaticMarkup(h(TaskCallback, { wait: WAIT, onAnswer: () => {} }));
    expect(markup).toMatch(/data-testid="send-success".*data-testid="send-failure".*data-testid="send-heartbeat"/s);
    expect(markup).toMatch(/<button data-testid="send-heartbeat">Send heartbeat<\/button>/);
    expect(markup).not.toContain("heartbeat-sent");
    expect(markup).not.toContain("heartbeat-error");
  });

  it("is held while its request runs", () => {
    const markup = renderToStaticMarkup(h(HeartbeatButton, { sending: true, onSend: () => {} }));
    expect(markup).toBe('<button data-testid="send-heartbeat" disabled="">Sending…</button>');
  });

  it("POSTs /v1/tasks/{token}/heartbeat without a body, and says when it was sent", async () => {
    const sent = serve(200, { status: "WAITING" });
    const markup = await click();
    expect(sent).toEqual([
      {
        url: `/v1/tasks/${TASK_TOKEN}/heartbeat`,
        method: "POST",
        headers: { Authorization: "Bearer sand_user-token" },
        body: undefined,
      },
    ]);
    expect(markup).toContain('role="status"');
    expect(text(markup)).toBe("Heartbeat sent at 11:04:05; the heartbeat clock restarts");
  });

  it("hands a 409 (the task no longer waits) to the panel with the server's message, as the forms do", async () => {
    serve(409, { error: "the task is no longer waiting: timed out: States.HeartbeatTimeout" });
    const answers: CallbackAnswer[] = [];
    const markup = await click((a) => answers.push(a));
    expect(answers).toEqual([{ ok: false, text: "the task is no longer waiting: timed out: States.HeartbeatTimeout" }]);
    expect(markup).toBe(""); // the panel's banner says it; the button says nothing more
  });

  it("shows another refusal inline with its status, the way the callback forms do", async () => {
    serve(403, { error: "the task token is of application 'ops'" });
    const answers: CallbackAnswer[] = [];
    const markup = await click((a) => answers.push(a));
    expect(answers).toEqual([]);
    expect(markup).toContain('class="banner banner-error" role="alert" data-testid="heartbeat-error"');
    expect(text(markup)).toBe("403: the task token is of application 'ops'");
  });
});
