// What the GUI accepts as an app upload before sending it (the server checks again).

export const MAX_UPLOAD_BYTES = 64 * 1024 * 1024;

/** Why a file cannot be uploaded as an app, or null when it can (and its content type). */
export function uploadCheck(name: string, size: number): { error: string } | { type: string } {
  const lower = name.toLowerCase();
  if (size > MAX_UPLOAD_BYTES) {
    return { error: `${name} is ${(size / 1048576).toFixed(1)} MiB; an app archive may be at most 64 MiB` };
  }
  if (lower.endsWith(".zip")) return { type: "application/zip" };
  if (lower.endsWith(".tar")) return { type: "application/x-tar" };
  return { error: `${name} is not an app archive: upload a .zip or .tar of the app's directory` };
}
