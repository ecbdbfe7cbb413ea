import { useEffect, useRef } from "react";
import { EditorView, basicSetup } from "codemirror";
import { EditorState, type Extension } from "@codemirror/state";
import { python } from "@codemirror/lang-python";
import { yaml } from "@codemirror/lang-yaml";
import { json } from "@codemirror/lang-json";
import { lintGutter, setDiagnostics, type Diagnostic } from "@codemirror/lint";

export interface InlineProblem {
  line: number;
  column: number | null;
  message: string;
}

function language(path: string): Extension[] {
  if (path.endsWith(".py")) return [python()];
  if (path.endsWith(".yaml") || path.endsWith(".yml")) return [yaml()];
  if (path.endsWith(".json")) return [json()];
  return [];
}

function diagnostics(state: EditorState, problems: InlineProblem[]): Diagnostic[] {
  return problems.map((p) => {
    const line = state.doc.line(Math.min(Math.max(1, p.line), state.doc.lines));
    const from = p.column ? Math.min(line.from + p.column - 1, line.to) : line.from;
    return { from, to: Math.max(from, line.to), severity: "error", message: p.message };
  });
}

/** CodeMirror 6 for one file at a time; its content element is `data-testid="editor"`. */
export function Editor({
  path,
  value,
  onChange,
  problems,
}: {
  path: string;
  value: string;
  onChange: (text: string) => void;
  problems: InlineProblem[];
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const change = useRef(onChange);
  change.current = onChange;

  useEffect(() => {
    if (!host.current) return;
    const v = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          lintGutter(),
          ...language(path),
          EditorView.contentAttributes.of({ "data-testid": "editor", "aria-label": `editor of ${path}` }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) change.current(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    return () => {
      v.destroy();
      view.current = null;
    };
    // A new editor per file; the text is then owned by CodeMirror.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [path]);

  // A change made outside the editor (the app's name written into app.yaml).
  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== value) {
      v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
    }
  }, [value]);

  useEffect(() => {
    const v = view.current;
    if (!v) return;
    v.dispatch(setDiagnostics(v.state, diagnostics(v.state, problems)));
  }, [problems, path]);

  return <div className="editor" ref={host} />;
}
