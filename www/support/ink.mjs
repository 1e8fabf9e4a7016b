// What the benchmarks take for "the plot is drawn", shared by them.

/**
 * Runs in the page before its own scripts (page.addInitScript): defines
 * `window.__inked(canvas)`, whether a plot's canvas shows its first series:
 * 20 pixels of that series' stroke colour (plots.ts PALETTE[0], #2563eb).
 */
export function installInked() {
  window.__inked = (canvas) => {
    const ctx = canvas.getContext("2d");
    if (!ctx || canvas.width === 0 || canvas.height === 0) return false;
    const d = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 12)
      if (d[i + 3] > 128 && Math.abs(d[i] - 37) < 40 && Math.abs(d[i + 1] - 99) < 40 && Math.abs(d[i + 2] - 235) < 40 && ++n >= 20) return true;
    return false;
  };
}
