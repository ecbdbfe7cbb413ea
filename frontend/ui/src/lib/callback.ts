// The callback forms' pure parts (issue 23): the output checked before it is sent, the
// failure's body, and how the server's answer reads.
import { ApiError, type TaskFailure } from "../api";
import { invokeErrorText } from "./errors";

/** The contract's bounds of a failure's fields (frontend/openapi.yaml). */
export const MAX_ERROR_CHARS = 256;
export const MAX_CAUSE_CHARS = 32768;

export type ParsedOutput =
  | { ok: true; value: unknown }
  | { ok: false; message: string; line: number; column: number | null };

/** The success form's text as a JSON value, or where and why it is not one (for the
 * editor's inline mark). */
export function parseOutput(text: string): ParsedOutput {
  if (text.trim() === "") {
    return { ok: false, message: "the output is empty: give a JSON value, such as {}", line: 1, column: null };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    const { line, column } = whereIn(text, reason);
    const at = column === null ? "" : ` at line ${line} column ${column}`;
    return { ok: false, message: `not valid JSON${at}: ${reason}`, line, column };
  }
}

/** Where JSON.parse's message says it broke: Firefox names the line and column, V8 the
 * position or the end of the input; column null when it does not say. */
function whereIn(text: string, reason: string): { line: number; column: number | null } {
  const named = /line (\d+) column (\d+)/.exec(reason);
  if (named) return { line: Number(named[1]), column: Number(named[2]) };
  const position = /position (\d+)/.exec(reason);
  if (!position && !/end of (JSON )?(input|data)/i.test(reason)) return { line: 1, column: null };
  const before = text.slice(0, position ? Number(position[1]) : text.length).split("\n");
  return { line: before.length, column: (before[before.length - 1] ?? "").length + 1 };
}

/** The failure form's fields as the body: blank ones left out (the server's defaults). */
export function failureBody(error: string, cause: string): TaskFailure {
  const body: TaskFailure = {};
  if (error.trim() !== "") body.error = error.trim();
  if (cause.trim() !== "") body.cause = cause;
  return body;
}

/** A refused callback as one line: a 409 (the task no longer waits) is the server's own
 * message, which names the status; a 429 "busy, retry in N s"; others "status: message". */
export function callbackErrorText(e: unknown): string {
  if (e instanceof ApiError && e.status === 409) return e.message;
  return invokeErrorText(e);
}
