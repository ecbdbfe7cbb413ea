// Triggers (issue 23, decision 0034): what the GUI says about an app's schedules and topic
// triggers, and about the trigger that started an execution. The documents are the API's
// (`GET /v1/apps/{app}/triggers`, an execution's `trigger`); nothing here parses text.
import { pauseTrigger, resumeTrigger, type ExecutionTrigger, type Trigger } from "../api";

/** What a trigger fires on: `cron(0 3 * * 1-5) Europe/Paris`, `rate(5 minutes)`, `topic orders`.
 * A rate is aligned to the Unix epoch in UTC whatever the zone, so only a cron names one. */
export function triggerSpec(t: Trigger): string {
  if (t.kind === "topic") return `topic ${t.topic}`;
  return t.schedule.startsWith("cron(") ? `${t.schedule} ${t.timezone}` : t.schedule;
}

/** A topic trigger's lag: the records of its topic that have not started an execution yet. */
export function lagText(lag: number | null | undefined): string {
  if (lag === null || lag === undefined) return "lag unknown";
  if (lag === 0) return "no records waiting";
  return `${lag} ${lag === 1 ? "record" : "records"} waiting`;
}

/** Pauses an active trigger, resumes a paused one; the server's new document of it. */
export function toggleTrigger(app: string, t: Trigger): Promise<Trigger> {
  return t.paused ? resumeTrigger(app, t.name) : pauseTrigger(app, t.name);
}

/** `list` with the trigger of `updated`'s name replaced by it (the list's order kept). */
export function withTrigger(list: readonly Trigger[], updated: Trigger): Trigger[] {
  return list.map((t) => (t.name === updated.name ? updated : t));
}

/** Epoch ms of an ISO-8601 instant of the API, or null when there is none (or it is not one). */
export function instantMs(iso: string | null | undefined): number | null {
  if (!iso) return null;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : ms;
}

/** The trigger of an ExecutionStarted history event (the worker copies it there, parsed), for
 * an execution whose document does not carry it yet; null when it holds none. */
export function triggerOfEvent(value: unknown): ExecutionTrigger | null {
  if (typeof value !== "object" || value === null) return null;
  const t = value as Record<string, unknown>;
  if (typeof t.name !== "string") return null;
  if (t.kind === "schedule") return value as ExecutionTrigger;
  if (t.kind === "topic" && typeof t.topic === "string") return value as ExecutionTrigger;
  return null;
}
