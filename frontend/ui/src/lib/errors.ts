import { ApiError } from "../api";

/**
 * What the invoke form shows for a failed invocation. A 429 (every host that runs the app is at
 * its admission bound, decision 0023) is "busy, retry in N s" with the server's reason, not an
 * error: nothing was queued, and trying again later is the remedy. Others: "status: message".
 */
export function invokeErrorText(e: unknown): string {
  if (!(e instanceof ApiError)) return String(e);
  if (e.status !== 429) return `${e.status}: ${e.message}`;
  const wait = e.retryAfterS === null ? "busy, retry later" : `busy, retry in ${e.retryAfterS} s`;
  // the server's message ends with its own "; retry in N s": said once, first
  const reason = e.message.replace(/;\s*retry in \d+ s\s*$/, "").trim();
  return reason ? `${wait} (${reason})` : wait;
}
