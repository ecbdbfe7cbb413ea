import { describe, expect, it } from "vitest";
import { buildGraph, nodeNames, type GNode } from "./graph";

const find = (n: GNode, id: string): GNode | undefined =>
  n.id === id ? n : n.children.map((c) => find(c, id)).find((x) => x !== undefined);

describe("buildGraph", () => {
  it("draws ASL states with Next, Choice, Default and dashed Catch edges; Parallel and Map hold their states", () => {
    const g = buildGraph("asl", {
      StartAt: "Pick",
      States: {
        Pick: { Type: "Choice", Choices: [{ Variable: "$.x", IsPresent: true, Next: "Fan" }], Default: "Done" },
        Fan: {
          Type: "Parallel",
          Branches: [
            { StartAt: "A", States: { A: { Type: "Pass", End: true } } },
            { StartAt: "B", States: { B: { Type: "Task", Resource: "b", End: true } } },
          ],
          Catch: [{ ErrorEquals: ["States.ALL"], Next: "Done" }],
          Next: "Each",
        },
        Each: { Type: "Map", ItemProcessor: { StartAt: "One", States: { One: { Type: "Task", Resource: "one", End: true } } }, Next: "Done" },
        Done: { Type: "Succeed" },
      },
    });
    expect(nodeNames(g)).toEqual(["Pick", "Fan", "A", "B", "Each", "One", "Done"]);
    expect(g.edges.map((e) => [e.source, e.target, e.kind])).toEqual([
      ["Pick", "Fan", "choice"],
      ["Pick", "Done", "default"],
      ["Fan", "Each", "next"],
      ["Fan", "Done", "catch"],
      ["Each", "Done", "next"],
      ["__start__", "Pick", "next"],
    ]);
    expect(find(g, "Fan")?.children.map((b) => b.children.map((c) => c.name))).toEqual([["A"], ["B"]]);
    expect(find(g, "Each")?.children.map((c) => c.name)).toEqual(["One"]);
    expect(find(g, "Pick")?.type).toBe("Choice");
  });

  it("draws native grains with next and dashed potentialNext edges, marking entry and join", () => {
    const g = buildGraph("native", {
      entry: "split",
      exit: "report",
      grains: { split: { next: ["a", "b"] }, a: { next: "report" }, b: { potentialNext: ["report"] }, report: { join: true } },
    });
    expect(g.edges.filter((e) => e.kind === "potential").map((e) => [e.source, e.target])).toEqual([["b", "report"]]);
    expect(find(g, "report")).toMatchObject({ join: true, exit: true });
    expect(find(g, "split")).toMatchObject({ entry: true });
  });

  it("ignores an edge to a state that does not exist (the validator reports it)", () => {
    const g = buildGraph("asl", { StartAt: "A", States: { A: { Type: "Pass", Next: "Nope" } } });
    expect(g.edges.map((e) => e.target)).toEqual(["A"]);
  });
});
