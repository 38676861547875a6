/// <reference types="vitest/config" />
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// Built for django-vite 3: Django renders {% vite_asset 'src/main.tsx' %}; in production the
// assets are collected from dist/ (STATIC_URL = /static/) and looked up in dist/manifest.json.
export default defineConfig({
  plugins: [react()],
  base: "/static/",
  server: {
    host: "127.0.0.1",
    port: 5173,
    strictPort: true,
    origin: "http://127.0.0.1:5173",
  },
  build: {
    manifest: "manifest.json",
    outDir: "dist",
    emptyOutDir: true,
    rollupOptions: {
      input: "src/main.tsx",
    },
  },
  test: {
    environment: "jsdom",
    setupFiles: ["src/test/setup.ts"],
    css: false,
    // A fixed non-UTC zone with a half-hour offset so date formatting tests are meaningful.
    env: { TZ: "Asia/Kolkata" },
    alias: [
      // uPlot needs canvas + matchMedia; tests use a recording stand-in.
      { find: /^uplot$/, replacement: fileURLToPath(new URL("./src/test/fakeUplot.ts", import.meta.url)) },
    ],
  },
});
