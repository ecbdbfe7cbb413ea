// Where a validation problem belongs. The server words them "<file>: <where>: <message>",
// or "<file>:<line>:<column>: <message>" for a syntax error (the CLI's format).

export interface ProblemPlace {
  /** The file the problem names, when it is one of the app's files; else null. */
  file: string | null;
  /** 1-based line: the line the problem names, else the line of the field its <where>
   * names (found in the file's text), else 1. */
  line: number;
  /** 1-based column when the problem names one, else null. */
  column: number | null;
}

const HEAD = /^([^:\s][^:]*?)(?::(\d+)(?::(\d+))?)?: /;

export function placeProblem(
  problem: string,
  files: readonly string[],
  texts: Readonly<Record<string, string>> = {},
): ProblemPlace {
  const head = HEAD.exec(problem);
  const name = head?.[1]?.trim() ?? "";
  const file = files.includes(name) ? name : null;
  if (head?.[2]) {
    return { file, line: Math.max(1, parseInt(head[2], 10)), column: head[3] ? parseInt(head[3], 10) : null };
  }
  const m = /\bline (\d+)(?:,? column (\d+))?/.exec(problem);
  if (m?.[1]) {
    return { file, line: Math.max(1, parseInt(m[1], 10)), column: m[2] ? parseInt(m[2], 10) : null };
  }
  const rest = head ? problem.slice(head[0].length) : "";
  const where = rest.includes(": ") ? rest.slice(0, rest.indexOf(": ")) : "";
  const text = file ? texts[file] : undefined;
  return { file, line: text && where ? fieldLine(text, where) : 1, column: null };
}

/** The 1-based line of the field a dotted location names (`States.Hello.Next`,
 * `States.P.Branches[0].States.A`) in YAML or JSON text: each key is looked for after
 * the previous one. 1 when the first key is not found. */
export function fieldLine(text: string, where: string): number {
  const lines = text.split("\n");
  let at = -1;
  for (const raw of where.split(".")) {
    const key = raw.replace(/\[\d+\]$/, "");
    if (!key) continue;
    const pattern = new RegExp(`^\\s*(?:-\\s*)?["']?${escapeRegExp(key)}["']?\\s*:`);
    const found = lines.findIndex((line, i) => i > at && pattern.test(line));
    if (found < 0) break;
    at = found;
  }
  return at < 0 ? 1 : at + 1;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Problems that name `file`, with their places. */
export function problemsOf(
  problems: readonly string[],
  file: string,
  files: readonly string[],
  texts: Readonly<Record<string, string>> = {},
) {
  return problems
    .map((text) => ({ text, place: placeProblem(text, files, texts) }))
    .filter((p) => p.place.file === file);
}
