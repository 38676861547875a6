// Stand-in for uPlot in jsdom (no canvas): records options and every setData().
type Data = (number | null | undefined)[][];

export default class FakeUPlot {
  static instances: FakeUPlot[] = [];
  opts: any;
  data: Data;
  target: HTMLElement;
  destroyed = false;
  setDataCalls = 0;

  constructor(opts: any, data: Data, target: HTMLElement) {
    this.opts = opts;
    this.data = data;
    this.target = target;
    const el = document.createElement("div");
    el.className = "fake-uplot";
    el.dataset.title = opts?.title ?? "";
    target.appendChild(el);
    FakeUPlot.instances.push(this);
  }

  setData(data: Data): void {
    this.data = data;
    this.setDataCalls++;
  }

  setSize(): void {}

  destroy(): void {
    this.destroyed = true;
    this.target.innerHTML = "";
  }

  /** The live plot whose title is `title`. */
  static byTitle(title: string): FakeUPlot | undefined {
    return FakeUPlot.instances.filter((p) => !p.destroyed && p.opts?.title === title).at(-1);
  }

  /** Series labels (without the x series). */
  get labels(): string[] {
    return (this.opts.series as { label?: string }[]).slice(1).map((s) => s.label ?? "");
  }
}
