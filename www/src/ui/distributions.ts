// The engine calls behind the heatmap and the region panel, shaped for
// them: which columns a region covers, the pixel columns a heatmap asks
// for. Everything they show is computed in the worker from raw rows.

import type { ArchiveHandle, Heatmap, RegionStats } from "../engine/types";

export function readHeatmap(handle: ArchiveHandle, source: number, stream: string, column: string, from: bigint, to: bigint, pixels: number, signal: AbortSignal): Promise<Heatmap> {
  return handle.heatmap({ source, stream, column, from, to, pixels }, { signal });
}

/** The statistics of [from, to] for the series plotted (columns and histograms; none plotted: nothing asked). */
export function readRegion(handle: ArchiveHandle, source: number, stream: string, from: bigint, to: bigint, columns: string[], signal: AbortSignal): Promise<RegionStats> {
  return handle.regionStats({ source, stream, from, to, columns }, { signal });
}
