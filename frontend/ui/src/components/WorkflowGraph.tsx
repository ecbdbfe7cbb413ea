import { useEffect, useMemo, useState } from "react";
import type { ELK as Elk, ElkExtendedEdge, ElkNode } from "elkjs/lib/elk-api";
import { buildGraph, nodeSize, type GEdge, type GNode } from "../lib/graph";
import { statusLabel, type NodeStatus } from "../lib/history";

// ELK is large (~1.5 MB): loaded with the first graph, in a chunk of its own.
let elkLoad: Promise<Elk> | null = null;
function loadElk(): Promise<Elk> {
  elkLoad ??= import("elkjs/lib/elk.bundled.js").then((m) => new m.default());
  return elkLoad;
}

const LAYOUT = {
  "elk.algorithm": "layered",
  "elk.direction": "DOWN",
  "elk.edgeRouting": "ORTHOGONAL",
  "elk.layered.spacing.nodeNodeBetweenLayers": "36",
  "elk.spacing.nodeNode": "28",
  "elk.spacing.edgeLabel": "4",
  // Keep the definition's order (branch 0 left of branch 1, states as written) where it can.
  "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
};

function toElk(n: GNode): ElkNode {
  const group = n.children.length > 0 || n.type === "Parallel" || n.type === "Map";
  const node: ElkNode = {
    id: n.id,
    layoutOptions: group
      ? { ...LAYOUT, "elk.padding": `[top=${n.type === "Branch" && n.id !== "root" ? 22 : 34},left=14,bottom=14,right=14]` }
      : undefined,
    children: n.children.map(toElk),
    edges: n.edges.map(
      (e): ElkExtendedEdge => ({
        id: e.id,
        sources: [e.source],
        targets: [e.target],
        labels: e.label ? [{ id: `${e.id}/l`, text: e.label, width: e.label.length * 6 + 6, height: 14 }] : [],
      }),
    ),
  };
  if (!group) Object.assign(node, nodeSize(n));
  else if (n.children.length === 0) Object.assign(node, { width: 160, height: 60 });
  return node;
}

interface Props {
  kind: string;
  definition: unknown;
  statuses?: Record<string, NodeStatus>;
  selected?: string | null;
  onSelect?: (state: string) => void;
  testId: string;
}

export function WorkflowGraph({ kind, definition, statuses, selected, onSelect, testId }: Props) {
  const root = useMemo(() => buildGraph(kind, definition), [kind, definition]);
  const [layout, setLayout] = useState<ElkNode | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    const graph = { ...toElk(root), layoutOptions: { ...LAYOUT, "elk.padding": "[top=12,left=12,bottom=12,right=12]" } };
    loadElk()
      .then((elk) => elk.layout(graph))
      .then((l) => live && setLayout(l))
      .catch((e: unknown) => live && setError(`the graph could not be laid out: ${String(e)}`));
    return () => {
      live = false;
    };
  }, [root]);

  if (error) return <div className="note error-text">{error}</div>;
  if (!layout) return <div className="loading">Laying out the graph…</div>;
  const byId = new Map<string, GNode>();
  const index = (n: GNode) => {
    byId.set(n.id, n);
    n.children.forEach(index);
  };
  index(root);

  const status = (name: string | null): string =>
    name === null ? "" : statuses ? (statuses[name] ?? "not-run") : "none";

  const renderEdges = (container: ElkNode, gedges: GEdge[], ox: number, oy: number) =>
    (container.edges ?? []).map((e) => {
      const g = gedges.find((x) => x.id === e.id);
      const sec = e.sections?.[0];
      if (!sec || !g) return null;
      const pts = [sec.startPoint, ...(sec.bendPoints ?? []), sec.endPoint];
      const d = pts.map((p, i) => `${i ? "L" : "M"}${p.x + ox},${p.y + oy}`).join(" ");
      const label = e.labels?.[0];
      return (
        <g key={e.id} className={`edge edge-${g.kind}`}>
          <path d={d} markerEnd={`url(#arrow-${testId})`} />
          {label && label.x !== undefined && label.y !== undefined && (
            <text x={label.x + ox + 3} y={label.y + oy + 11} className="edge-label">
              {label.text}
            </text>
          )}
        </g>
      );
    });

  const renderNode = (l: ElkNode, ox: number, oy: number): React.ReactNode => {
    const g = byId.get(l.id);
    if (!g) return null;
    const x = (l.x ?? 0) + ox;
    const y = (l.y ?? 0) + oy;
    const w = l.width ?? 0;
    const h = l.height ?? 0;
    const st = status(g.name);
    const click = g.name && onSelect ? () => onSelect(g.name as string) : undefined;
    const keys = click
      ? {
          tabIndex: 0,
          role: "button",
          "aria-label": `${g.name}: ${g.type}${st && st !== "none" ? `, ${statusLabel(st)}` : ""}`,
          onKeyDown: (e: React.KeyboardEvent) => (e.key === "Enter" || e.key === " ") && click(),
        }
      : {};
    const sel = g.name !== null && g.name === selected ? " selected" : "";
    if (g.type === "Parallel" || g.type === "Map" || g.type === "Branch") {
      const isGroup = g.type !== "Branch";
      return (
        <g
          key={l.id}
          className={`group group-${g.type.toLowerCase()}`}
          data-testid={isGroup ? `group-${g.name}` : undefined}
        >
          <rect x={x} y={y} width={w} height={h} rx={8} className="group-box" />
          {isGroup ? (
            <g
              data-testid={`node-${g.name}`}
              data-status={st}
              data-type={g.type}
              className={`node group-head status-${st}${st === "failed" ? " failed" : ""}${sel}`}
              onClick={click}
              {...keys}
            >
              <rect x={x} y={y} width={w} height={24} rx={8} />
              <text x={x + 10} y={y + 16}>
                {g.label}
                <tspan className="node-sub" dx={6}>
                  {g.type}
                </tspan>
              </text>
            </g>
          ) : (
            <text x={x + 8} y={y + 14} className="branch-label">
              {g.label}
            </text>
          )}
          {renderEdges(l, g.edges, x, y)}
          {(l.children ?? []).map((c) => renderNode(c, x, y))}
        </g>
      );
    }
    if (g.type === "Start") {
      return <circle key={l.id} cx={x + w / 2} cy={y + h / 2} r={w / 2 - 2} className="start-dot" />;
    }
    let shape: React.ReactNode;
    if (g.type === "Choice") {
      shape = <polygon points={`${x + w / 2},${y} ${x + w},${y + h / 2} ${x + w / 2},${y + h} ${x},${y + h / 2}`} />;
    } else {
      const rx = g.type === "Succeed" || g.type === "Fail" ? h / 2 : 6;
      shape = <rect x={x} y={y} width={w} height={h} rx={rx} />;
    }
    const sub = g.type === "Grain" ? [g.entry ? "entry" : "", g.join ? "join" : "", g.exit ? "exit" : ""].filter(Boolean).join(" · ") : g.type;
    return (
      <g
        key={l.id}
        data-testid={`node-${g.name}`}
        data-status={st}
        data-type={g.type}
        className={`node type-${g.type.toLowerCase()} status-${st}${st === "failed" ? " failed" : ""}${sel}${g.join ? " join" : ""}`}
        onClick={click}
        {...keys}
      >
        <title>{`${g.name} (${g.type}${st && st !== "none" ? `: ${statusLabel(st)}` : ""})`}</title>
        {shape}
        <text x={x + w / 2} y={y + h / 2 + (sub ? -2 : 4)} textAnchor="middle" className="node-label">
          {g.label}
        </text>
        {sub && (
          <text x={x + w / 2} y={y + h / 2 + 12} textAnchor="middle" className="node-sub">
            {sub}
          </text>
        )}
      </g>
    );
  };

  const W = layout.width ?? 100;
  const H = layout.height ?? 100;
  return (
    <div className="graph-scroll">
      <svg data-testid={testId} className="graph" width={W} height={H} viewBox={`0 0 ${W} ${H}`}>
        <defs>
          <marker id={`arrow-${testId}`} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" className="arrow" />
          </marker>
        </defs>
        {renderEdges(layout, root.edges, 0, 0)}
        {(layout.children ?? []).map((c) => renderNode(c, 0, 0))}
      </svg>
    </div>
  );
}
