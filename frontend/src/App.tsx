import { InboxProvider } from "./inbox";
import { Layout } from "./components/Layout";
import { PageCtx, type PageContext } from "./page";
import { StreamsPage } from "./pages/StreamsPage";
import { StreamPage } from "./pages/StreamPage";
import { CreatePage } from "./pages/CreatePage";
import { TablesPage } from "./pages/TablesPage";
import { InboxPage } from "./pages/InboxPage";
import { DashboardPage } from "./pages/DashboardPage";
import { ErrorBanner } from "./components/common";
import { DesignerPage } from "./designer/DesignerPage";

function PageBody({ ctx }: { ctx: PageContext }) {
  switch (ctx.page) {
    case "streams":
      return <StreamsPage />;
    case "stream":
      return ctx.streamId === null ? <ErrorBanner error="No stream id given (data-stream-id)." /> : <StreamPage id={ctx.streamId} />;
    case "create":
      return <CreatePage />;
    case "tables":
      return <TablesPage />;
    case "inbox":
      return <InboxPage />;
    case "designer":
      return <DesignerPage draftId={ctx.draftId} />;
    case "dashboard":
      return <DashboardPage />;
    default:
      return <ErrorBanner error={`Unknown page "${ctx.page}".`} />;
  }
}

export function App({ ctx }: { ctx: PageContext }) {
  return (
    <PageCtx.Provider value={ctx}>
      <InboxProvider>
        <Layout>
          <PageBody ctx={ctx} />
        </Layout>
      </InboxProvider>
    </PageCtx.Provider>
  );
}
