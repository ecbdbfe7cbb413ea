// The files of a new application, and keeping app.yaml's name in step with the name field.
import { strToU8, zipSync } from "fflate";

export function templateFiles(name: string): Record<string, string> {
  return {
    "app.yaml": `# ${name}: made in the SAND web GUI.\nname: ${name}\ngrains:\n  hello: grains/hello.py\nworkflows:\n  main: workflows/main.yaml\n`,
    "workflows/main.yaml": `# Amazon States Language: one Task state running the grain "hello".\nStartAt: Hello\nStates:\n  Hello:\n    Type: Task\n    Resource: hello\n    End: true\n`,
    "grains/hello.py": `def handle(event, context):\n    return {"hello": event.get("name", "world")}\n`,
  };
}

/** app.yaml with its top-level `name:` set to `name` (unchanged when it has none). */
export function renameAppYaml(text: string, name: string): string {
  return text.replace(/^name:.*$/m, `name: ${name}`);
}

/** The app directory as a zip, files at its root. */
export function zipFiles(files: Record<string, string>): Uint8Array {
  const entries: Record<string, Uint8Array> = {};
  for (const [path, text] of Object.entries(files)) entries[path] = strToU8(text);
  return zipSync(entries);
}

/** Why a new file path is refused, or null. */
export function badFilePath(path: string, existing: readonly string[]): string | null {
  if (!path.trim()) return "the file path is empty";
  if (path.startsWith("/") || path.split("/").some((p) => p === ".." || p === "" || p === "."))
    return `'${path}' must be a relative path inside the app (no leading /, no . or .. parts)`;
  if (existing.includes(path)) return `'${path}' already exists`;
  return null;
}
