// A workflow definition (ASL or SAND native) as a tree of nodes and edges for ELK: states
// (or grains) are nodes; Parallel and Map are compound nodes holding their inner states.

export type NodeType =
  | "Task" | "Choice" | "Pass" | "Wait" | "Succeed" | "Fail" | "Parallel" | "Map"
  | "Branch" | "Start" | "Grain";
export type EdgeKind = "next" | "choice" | "default" | "catch" | "potential";

export interface GEdge {
  id: string;
  source: string;
  target: string;
  kind: EdgeKind;
  label?: string;
}

export interface GNode {
  id: string;
  /** The state or grain name (the `node-<name>` test id); null for branches and start. */
  name: string | null;
  label: string;
  type: NodeType;
  children: GNode[];
  edges: GEdge[];
  join?: boolean;
  entry?: boolean;
  exit?: boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const asList = (v: unknown): string[] =>
  typeof v === "string" ? [v] : Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];

const STATE_TYPES = new Set(["Task", "Choice", "Pass", "Wait", "Succeed", "Fail", "Parallel", "Map"]);

function aslScope(machine: Obj, scopeId: string): { nodes: GNode[]; edges: GEdge[] } {
  const states = isObj(machine.States) ? machine.States : {};
  const names = new Set(Object.keys(states));
  const nodes: GNode[] = [];
  const edges: GEdge[] = [];
  let n = 0;
  const edge = (source: string, target: unknown, kind: EdgeKind, label?: string) => {
    if (typeof target === "string" && names.has(target)) {
      edges.push({ id: `${scopeId}/e${n++}`, source, target, kind, label });
    }
  };
  for (const [name, raw] of Object.entries(states)) {
    const st = isObj(raw) ? raw : {};
    const type = (typeof st.Type === "string" && STATE_TYPES.has(st.Type) ? st.Type : "Pass") as NodeType;
    const node: GNode = { id: name, name, label: name, type, children: [], edges: [] };
    if (type === "Parallel" && Array.isArray(st.Branches)) {
      st.Branches.forEach((b, i) => {
        if (!isObj(b)) return;
        const inner = aslScope(b, `${name}[${i}]`);
        node.children.push({
          id: `${name}[${i}]`, name: null, label: `branch ${i}`, type: "Branch",
          children: inner.nodes, edges: inner.edges,
        });
      });
    } else if (type === "Map") {
      const proc = isObj(st.ItemProcessor) ? st.ItemProcessor : isObj(st.Iterator) ? st.Iterator : null;
      if (proc) {
        const inner = aslScope(proc, name);
        node.children = inner.nodes;
        node.edges = inner.edges;
      }
    }
    nodes.push(node);
    edge(name, st.Next, "next");
    if (type === "Choice") {
      const choices = Array.isArray(st.Choices) ? st.Choices : [];
      choices.forEach((c, i) => {
        if (isObj(c)) edge(name, c.Next, "choice", `rule ${i + 1}`);
      });
      edge(name, st.Default, "default", "Default");
    }
    const catches = Array.isArray(st.Catch) ? st.Catch : [];
    for (const c of catches) {
      if (isObj(c)) edge(name, c.Next, "catch", asList(c.ErrorEquals).join(", ") || "catch");
    }
  }
  const start = machine.StartAt;
  if (scopeId === "" && typeof start === "string") {
    nodes.unshift({ id: "__start__", name: null, label: "start", type: "Start", children: [], edges: [] });
    edge("__start__", start, "next");
  }
  return { nodes, edges };
}

function nativeGraph(def: Obj): { nodes: GNode[]; edges: GEdge[] } {
  const grains = isObj(def.grains) ? def.grains : {};
  const names = new Set(Object.keys(grains));
  const nodes: GNode[] = [];
  const edges: GEdge[] = [];
  let n = 0;
  for (const [name, raw] of Object.entries(grains)) {
    const g = isObj(raw) ? raw : {};
    nodes.push({
      id: name, name, label: name, type: "Grain", children: [], edges: [],
      join: g.join === true, entry: def.entry === name, exit: def.exit === name,
    });
    for (const t of asList(g.next)) {
      if (names.has(t)) edges.push({ id: `e${n++}`, source: name, target: t, kind: "next" });
    }
    for (const t of asList(g.potentialNext)) {
      if (names.has(t)) edges.push({ id: `e${n++}`, source: name, target: t, kind: "potential" });
    }
  }
  if (typeof def.entry === "string" && names.has(def.entry)) {
    nodes.unshift({ id: "__start__", name: null, label: "start", type: "Start", children: [], edges: [] });
    edges.push({ id: `e${n++}`, source: "__start__", target: def.entry, kind: "next" });
  }
  return { nodes, edges };
}

/** The root of the graph of a definition (kind "asl" or "native"). */
export function buildGraph(kind: string, definition: unknown): GNode {
  const def = isObj(definition) ? definition : {};
  const { nodes, edges } = kind === "native" ? nativeGraph(def) : aslScope(def, "");
  return { id: "root", name: null, label: "", type: "Branch", children: nodes, edges };
}

/** Every state/grain name in the graph (depth first). */
export function nodeNames(root: GNode): string[] {
  const out: string[] = [];
  const walk = (n: GNode) => {
    if (n.name) out.push(n.name);
    n.children.forEach(walk);
  };
  walk(root);
  return out;
}

export function nodeSize(n: GNode): { width: number; height: number } {
  const w = Math.max(110, Math.min(260, n.label.length * 7.5 + 36));
  switch (n.type) {
    case "Start":
      return { width: 22, height: 22 };
    case "Choice":
      return { width: w + 30, height: 56 };
    case "Succeed":
    case "Fail":
      return { width: w, height: 34 };
    default:
      return { width: w, height: n.join || n.entry ? 48 : 40 };
  }
}
