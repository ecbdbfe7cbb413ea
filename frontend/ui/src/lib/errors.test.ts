import { describe, expect, it } from "vitest";
import { ApiError, errorOf } from "../api";
import { invokeErrorText } from "./errors";

const BUSY =
  "application 'hello' is at its bound on host 'host-1': 8 of its events wait or run, " +
  "at most 8 per application (admission.max_queued_per_app); retry in 3 s";

function answer(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", ...headers },
  });
}

describe("a 429 from the invoke route", () => {
  it("reads the seconds to wait from the body", async () => {
    const err = await errorOf(answer(429, { error: BUSY, retry_after_s: 3 }, { "Retry-After": "3" }));
    expect(err.status).toBe(429);
    expect(err.retryAfterS).toBe(3);
  });
  it("reads them from Retry-After when the body does not say (a proxy's 429)", async () => {
    const err = await errorOf(new Response("Too Many Requests", { status: 429, headers: { "Retry-After": "7" } }));
    expect(err.retryAfterS).toBe(7);
  });
  it("is shown as busy, retry in N s, with the server's reason once", async () => {
    const err = await errorOf(answer(429, { error: BUSY, retry_after_s: 3 }, { "Retry-After": "3" }));
    const text = invokeErrorText(err);
    expect(text).toMatch(/^busy, retry in 3 s \(application 'hello' is at its bound/);
    expect(text.match(/retry in/g)).toHaveLength(1);
    expect(text).toContain("admission.max_queued_per_app");
  });
  it("says retry later when no one said when", () => {
    expect(invokeErrorText(new ApiError("", 429))).toBe("busy, retry later");
  });
});

describe("other refusals", () => {
  it("keep their status and message, and carry no retry-after", async () => {
    const err = await errorOf(answer(404, { error: "no application 'nope' is deployed" }, { "Retry-After": "5" }));
    expect(err.retryAfterS).toBeNull();
    expect(invokeErrorText(err)).toBe("404: no application 'nope' is deployed");
  });
});
