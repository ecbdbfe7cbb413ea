// Where a validation problem belongs: the server words them "<file>: <where>: <message>".

export interface ProblemPlace {
  /** The file the problem names, when it is one of the app's files; else null. */
  file: string | null;
  /** 1-based line: the problem's `line L` when it says one, else 1. */
  line: number;
  /** 1-based column when the problem says `column C`, else null. */
  column: number | null;
}

export function placeProblem(problem: string, files: readonly string[]): ProblemPlace {
  const colon = problem.indexOf(": ");
  const head = colon > 0 ? problem.slice(0, colon).trim() : "";
  const file = files.includes(head) ? head : null;
  const m = /\bline (\d+)(?:,? column (\d+))?/.exec(problem);
  const line = m?.[1] ? Math.max(1, parseInt(m[1], 10)) : 1;
  const column = m?.[2] ? parseInt(m[2], 10) : null;
  return { file, line, column };
}

/** Problems that name `file`, with their places. */
export function problemsOf(problems: readonly string[], file: string, files: readonly string[]) {
  return problems
    .map((text) => ({ text, place: placeProblem(text, files) }))
    .filter((p) => p.place.file === file);
}
