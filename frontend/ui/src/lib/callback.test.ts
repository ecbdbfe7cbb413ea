import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiError, TOKEN_KEY, sendTaskFailure, sendTaskHeartbeat, sendTaskSuccess } from "../api";
import { callbackErrorText, failureBody, parseOutput } from "./callback";

const TASK_TOKEN = "c2hvcApleGVjLTEKZXhlYy0xL0FwcHJvdmUjMQ.c2lnbmF0dXJl";

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

/** fetch answering `status` with `body`, recording each request; a signed-in session. */
function serve(status: number, body: unknown, headers: Record<string, string> = {}): Sent[] {
  const sent: Sent[] = [];
  vi.stubGlobal("fetch", (url: string, init: RequestInit) => {
    sent.push({
      url,
      method: init.method ?? "GET",
      headers: init.headers as Record<string, string>,
      body: typeof init.body === "string" ? (JSON.parse(init.body) as unknown) : init.body,
    });
    return Promise.resolve(
      new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } }),
    );
  });
  return sent;
}

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

describe("the callback requests", () => {
  it("send the output to /v1/tasks/{token}/success with the signed-in user's token", async () => {
    const sent = serve(200, { status: "SUCCEEDED" });
    await expect(sendTaskSuccess(TASK_TOKEN, { approved: true })).resolves.toEqual({ status: "SUCCEEDED" });
    expect(sent).toEqual([
      {
        url: `/v1/tasks/${TASK_TOKEN}/success`,
        method: "POST",
        headers: { Authorization: "Bearer sand_user-token", "Content-Type": "application/json" },
        body: { output: { approved: true } },
      },
    ]);
  });

  it("send any JSON value as the output, null included", async () => {
    const sent = serve(200, { status: "SUCCEEDED" });
    await sendTaskSuccess(TASK_TOKEN, null);
    await sendTaskSuccess(TASK_TOKEN, [1, "two"]);
    expect(sent.map((s) => s.body)).toEqual([{ output: null }, { output: [1, "two"] }]);
  });

  it("send a failure's error and cause, and a heartbeat without a body", async () => {
    const sent = serve(200, { status: "FAILED" });
    await sendTaskFailure(TASK_TOKEN, failureBody("Rejected", "no budget"));
    await sendTaskHeartbeat(TASK_TOKEN);
    expect(sent.map((s) => [s.url, s.body])).toEqual([
      [`/v1/tasks/${TASK_TOKEN}/failure`, { error: "Rejected", cause: "no budget" }],
      [`/v1/tasks/${TASK_TOKEN}/heartbeat`, undefined],
    ]);
  });

  it("quote the token as one path segment", async () => {
    const sent = serve(200, { status: "WAITING" });
    await sendTaskHeartbeat("a/b?c.d");
    expect(sent[0]?.url).toBe("/v1/tasks/a%2Fb%3Fc.d/heartbeat");
  });

  it("reject with the server's message: a task no longer waiting is a 409 shown as it is", async () => {
    serve(409, { error: "the task is no longer waiting: already SUCCEEDED" });
    const err = await sendTaskSuccess(TASK_TOKEN, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(409);
    expect(callbackErrorText(err)).toBe("the task is no longer waiting: already SUCCEEDED");
  });

  it("show other refusals with their status, and a 429 as busy", async () => {
    serve(403, { error: "the task token is of application 'ops'" });
    const forbidden = await sendTaskFailure(TASK_TOKEN, {}).catch((e: unknown) => e);
    expect(callbackErrorText(forbidden)).toBe("403: the task token is of application 'ops'");
    serve(429, { error: "busy" }, { "Retry-After": "3" });
    const busy = await sendTaskHeartbeat(TASK_TOKEN).catch((e: unknown) => e);
    expect(callbackErrorText(busy)).toBe("busy, retry in 3 s (busy)");
  });
});

describe("parseOutput", () => {
  it("takes any JSON value", () => {
    expect(parseOutput('{"approved": true}')).toEqual({ ok: true, value: { approved: true } });
    expect(parseOutput(" null ")).toEqual({ ok: true, value: null });
    expect(parseOutput('"yes"')).toEqual({ ok: true, value: "yes" });
  });

  it("says where the text stops being JSON, for the editor's mark", () => {
    const bad = parseOutput('{\n  "a": 1,\n  b: 2\n}');
    expect(bad).toMatchObject({ ok: false, line: 3, column: 3 });
    expect(bad.ok ? "" : bad.message).toMatch(/^not valid JSON at line 3 column 3: /);
    expect(parseOutput("[1,")).toMatchObject({ ok: false, line: 1, column: 4 });
  });

  it("refuses an empty text instead of sending nothing", () => {
    expect(parseOutput("  \n")).toMatchObject({ ok: false, message: expect.stringContaining("empty") });
  });
});

describe("failureBody", () => {
  it("leaves out blank fields (the server's defaults apply)", () => {
    expect(failureBody("  ", "")).toEqual({});
    expect(failureBody(" Rejected ", "why\nand more")).toEqual({ error: "Rejected", cause: "why\nand more" });
  });
});
