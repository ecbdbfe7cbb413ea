import { describe, expect, it } from "vitest";
import { placeProblem, problemsOf } from "./problems";
import { uploadCheck } from "./upload";
import { badFilePath, renameAppYaml, templateFiles, zipFiles } from "./template";
import { unzipSync, strFromU8 } from "fflate";

const files = ["app.yaml", "workflows/main.yaml", "grains/hello.py"];

describe("placeProblem", () => {
  it("maps a problem to its file and the line and column it names", () => {
    expect(placeProblem("workflows/main.yaml: line 4 column 7: mapping values are not allowed here", files)).toEqual({
      file: "workflows/main.yaml", line: 4, column: 7,
    });
  });
  it("puts a problem without a line on line 1 of its file when the text is not known", () => {
    expect(placeProblem("workflows/main.yaml: States.A.Next: 'B' is not a state", files)).toEqual({
      file: "workflows/main.yaml", line: 1, column: null,
    });
  });
  it("reads the CLI's file:line:column: form of a syntax error", () => {
    expect(placeProblem("workflows/main.yaml:2:1: malformed YAML: could not find expected ':'", files)).toEqual({
      file: "workflows/main.yaml", line: 2, column: 1,
    });
  });
  it("finds the line of the field a problem names in the file's text", () => {
    const texts = {
      "workflows/main.yaml": "StartAt: A\nStates:\n  A:\n    Type: Pass\n    Next: B\n  B:\n    Type: Pass\n    Next: Nowhere\n",
    };
    expect(placeProblem("workflows/main.yaml: States.B.Next: Next 'Nowhere' names no state", files, texts).line).toBe(8);
    expect(placeProblem("workflows/main.yaml: States.A: unreachable", files, texts).line).toBe(3);
    expect(placeProblem("workflows/main.yaml: States.Z.Next: gone", files, texts).line).toBe(2);
  });
  it("leaves a problem naming no file of the app unplaced", () => {
    expect(placeProblem("the archive has no app.yaml", files).file).toBeNull();
    expect(placeProblem("grains/gone.py: not found", files).file).toBeNull();
  });
  it("filters the problems of one file", () => {
    const ps = ["app.yaml: name: bad", "workflows/main.yaml: line 2: x", "grains/hello.py: line 3 column 1: SyntaxError"];
    expect(problemsOf(ps, "grains/hello.py", files).map((p) => p.place.line)).toEqual([3]);
  });
});

describe("uploads and new apps", () => {
  it("accepts .zip and .tar with their content types, refuses others and > 64 MiB", () => {
    expect(uploadCheck("app.zip", 10)).toEqual({ type: "application/zip" });
    expect(uploadCheck("APP.TAR", 10)).toEqual({ type: "application/x-tar" });
    expect(uploadCheck("notes.txt", 10)).toHaveProperty("error", expect.stringContaining(".zip or .tar"));
    expect(uploadCheck("big.zip", 64 * 1024 * 1024 + 1)).toHaveProperty("error", expect.stringContaining("64 MiB"));
  });
  it("zips the template at the archive's root, with app.yaml's name following the name field", () => {
    const t = templateFiles("first");
    t["app.yaml"] = renameAppYaml(t["app.yaml"] ?? "", "second");
    const out = unzipSync(zipFiles(t));
    expect(Object.keys(out).sort()).toEqual(["app.yaml", "grains/hello.py", "workflows/main.yaml"]);
    expect(strFromU8(out["app.yaml"] as Uint8Array)).toMatch(/^name: second$/m);
    expect(strFromU8(out["grains/hello.py"] as Uint8Array)).toContain('return {"hello": event.get("name", "world")}');
  });
  it("refuses file paths outside the app or already there", () => {
    expect(badFilePath("grains/x.py", files)).toBeNull();
    expect(badFilePath("../x.py", files)).toMatch(/relative path/);
    expect(badFilePath("/etc/x", files)).toMatch(/relative path/);
    expect(badFilePath("app.yaml", files)).toMatch(/already exists/);
  });
});
