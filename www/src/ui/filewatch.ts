// A dropped file that keeps being written: Chromium hands a drop's items
// out as file-system handles, which, unlike the File the drop carries, can
// be asked again for the file as it is on disk now. The viewer keeps the
// handle and offers to reload when a newer version appears; it never
// reloads on its own, since a person may be in the middle of reading.

/** What the viewer needs of a `FileSystemFileHandle`. */
export interface FileSource {
  getFile(): Promise<File>;
}

/** The size and modification time a File was read at. */
export interface FileStamp {
  size: number;
  lastModified: number;
}

export function stampOf(file: File): FileStamp {
  return { size: file.size, lastModified: file.lastModified };
}

/**
 * The handles of a drop's files, in the order of `dataTransfer.files`
 * (null where the browser has none). Must be called during the drop event
 * itself: the items are unreadable once it returns.
 */
export function handlesOf(items: DataTransferItemList | undefined): Promise<FileSource | null>[] {
  const out: Promise<FileSource | null>[] = [];
  for (const item of Array.from(items ?? [])) {
    if (item.kind !== "file") continue;
    const get = (item as { getAsFileSystemHandle?: () => Promise<unknown> }).getAsFileSystemHandle;
    out.push(typeof get === "function" ? get.call(item).then(asFileSource, () => null) : Promise.resolve(null));
  }
  return out;
}

function asFileSource(handle: unknown): FileSource | null {
  if (typeof handle !== "object" || handle === null) return null;
  const h = handle as { kind?: unknown; getFile?: unknown };
  return h.kind === "file" && typeof h.getFile === "function" ? (handle as FileSource) : null;
}

/** How often a visible page looks at the file again. */
export const RECHECK_MS = 2000;

/**
 * Looks at a dropped file again while the page is visible (every
 * RECHECK_MS, and whenever the window gains focus or the page becomes
 * visible) and calls `newer` with the file as it is now when its size or
 * modification time differ from `seen`. A file that cannot be read now
 * (moved, deleted, permission gone) is not news: it is looked at again
 * next time.
 */
export class FileWatch {
  private timer: ReturnType<typeof setInterval> | null = null;
  private checking = false;
  private readonly onWake = () => {
    if (!document.hidden) void this.check();
  };

  constructor(
    private readonly source: FileSource,
    private seen: FileStamp,
    private readonly newer: (file: File) => void,
  ) {
    this.timer = setInterval(this.onWake, RECHECK_MS);
    window.addEventListener("focus", this.onWake);
    document.addEventListener("visibilitychange", this.onWake);
  }

  /** Looks now; resolves once the look is done. */
  async check(): Promise<void> {
    if (this.checking || this.timer === null) return;
    this.checking = true;
    try {
      const file = await this.source.getFile();
      if (this.timer === null) return;
      if (file.size !== this.seen.size || file.lastModified !== this.seen.lastModified) {
        this.seen = stampOf(file);
        this.newer(file);
      }
    } catch {
      // Unreadable for now: not a newer version.
    } finally {
      this.checking = false;
    }
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    window.removeEventListener("focus", this.onWake);
    document.removeEventListener("visibilitychange", this.onWake);
  }
}
