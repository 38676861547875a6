// Entry point (django-vite: {% vite_asset 'src/main.tsx' %}). Django renders
// <div id="root" data-page data-stream-id data-username data-is-staff data-csrf>.
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { setCsrfToken } from "./api/client";
import { readPageContext } from "./page";
import "./styles.css";

const TITLES: Record<string, string> = {
  streams: "Streams",
  stream: "Stream",
  create: "Create stream",
  designer: "Stream designer",
  dashboard: "Dashboard",
  tables: "Tables",
  inbox: "Inbox",
};

const el = document.getElementById("root");
if (el) {
  const ctx = readPageContext(el);
  setCsrfToken(ctx.csrf);
  document.title = `${TITLES[ctx.page] ?? "tdweb"} · tdweb`;
  createRoot(el).render(
    <StrictMode>
      <App ctx={ctx} />
    </StrictMode>,
  );
}
