import { describe, expect, it } from "vitest";
import type { Trigger } from "../api";
import { instantMs, lagText, triggerOfEvent, triggerSpec, withTrigger } from "./triggers";

const schedule = (schedule: string, timezone = "UTC"): Trigger => ({
  name: "s",
  kind: "schedule",
  schedule,
  timezone,
  workflow: "main",
  input: {},
  missed: "run_once",
  paused: false,
  paused_at: null,
  next_firing: null,
  last_firing: null,
});
const topic: Trigger = { name: "t", kind: "topic", topic: "orders", workflow: "main", paused: false, paused_at: null, lag: null };

describe("a trigger's spec", () => {
  it("is a cron with its zone, UTC included", () => {
    expect(triggerSpec(schedule("cron(0 3 * * 1-5)", "Europe/Paris"))).toBe("cron(0 3 * * 1-5) Europe/Paris");
    expect(triggerSpec(schedule("cron(*/5 * * * *)"))).toBe("cron(*/5 * * * *) UTC");
  });
  it("is a rate alone (rates are aligned to the epoch in UTC, whatever the zone)", () => {
    expect(triggerSpec(schedule("rate(1 minute)"))).toBe("rate(1 minute)");
  });
  it("is the topic of a topic trigger", () => {
    expect(triggerSpec(topic)).toBe("topic orders");
  });
});

describe("a topic trigger's lag", () => {
  it("counts the records waiting, and says when it is not known", () => {
    expect(lagText(12)).toBe("12 records waiting");
    expect(lagText(1)).toBe("1 record waiting");
    expect(lagText(0)).toBe("no records waiting");
    expect(lagText(null)).toBe("lag unknown");
    expect(lagText(undefined)).toBe("lag unknown");
  });
});

describe("the list after a change", () => {
  it("has the changed trigger in its place, the others as they were", () => {
    const a = schedule("rate(1 minute)");
    const changed = { ...topic, paused: true };
    expect(withTrigger([a, topic], changed)).toEqual([a, changed]);
  });
});

describe("instants of the API", () => {
  it("are read as epoch ms; none or garbage is null", () => {
    expect(instantMs("2026-11-30T02:00:00Z")).toBe(Date.UTC(2026, 10, 30, 2));
    expect(instantMs(null)).toBeNull();
    expect(instantMs("soon")).toBeNull();
  });
});

describe("the trigger of a start event", () => {
  it("is read when it is one of the two kinds", () => {
    const fired = { name: "nightly", kind: "schedule", time: "2026-11-27T02:00:00Z" };
    const record = { name: "orders", kind: "topic", topic: "orders", partition: 0, offset: 17 };
    expect(triggerOfEvent(fired)).toEqual(fired);
    expect(triggerOfEvent(record)).toEqual(record);
  });
  it("is null when the event holds none, or something else", () => {
    expect(triggerOfEvent(undefined)).toBeNull();
    expect(triggerOfEvent(null)).toBeNull();
    expect(triggerOfEvent("nightly")).toBeNull();
    expect(triggerOfEvent({ name: "x", kind: "webhook" })).toBeNull();
  });
});
