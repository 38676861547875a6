// jsdom stand-ins React Flow needs (reactflow.dev "Testing"): ResizeObserver that reports at once,
// DOMMatrixReadOnly for the viewport transform, and non-zero element sizes so nodes get measured.
// Imported by the designer's test files only.
class ResizeObserverStub {
  callback: ResizeObserverCallback;
  constructor(callback: ResizeObserverCallback) {
    this.callback = callback;
  }
  observe(target: Element) {
    this.callback([{ target } as unknown as ResizeObserverEntry], this as unknown as ResizeObserver);
  }
  unobserve() {}
  disconnect() {}
}

class DOMMatrixReadOnlyStub {
  m22: number;
  constructor(transform?: string) {
    const scale = transform?.match(/scale\(([1-9.])\)/)?.[1];
    this.m22 = scale !== undefined ? +scale : 1;
  }
}

const g = globalThis as unknown as Record<string, unknown>;
g.ResizeObserver = ResizeObserverStub;
g.DOMMatrixReadOnly = DOMMatrixReadOnlyStub;

Object.defineProperties(window.HTMLElement.prototype, {
  offsetHeight: {
    configurable: true,
    get() {
      return Number.parseFloat((this as HTMLElement).style.height) || 40;
    },
  },
  offsetWidth: {
    configurable: true,
    get() {
      return Number.parseFloat((this as HTMLElement).style.width) || 180;
    },
  },
});

(window.SVGElement.prototype as unknown as { getBBox: () => DOMRect }).getBBox = () =>
  ({ x: 0, y: 0, width: 0, height: 0 }) as DOMRect;
