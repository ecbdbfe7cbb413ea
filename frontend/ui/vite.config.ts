import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

// Served by the frontends (and nginx) under /ui/; `npm run dev` proxies the API to a
// local stack's nginx (default port 18080, SAND_URL to change it).
export default defineConfig({
  base: "/ui/",
  plugins: [react()],
  build: { outDir: "dist", sourcemap: false, chunkSizeWarningLimit: 2500 },
  server: {
    proxy: { "/v1": process.env.SAND_URL ?? "http://127.0.0.1:18080" },
  },
  test: { environment: "node", include: ["src/**/*.test.ts"] },
});
