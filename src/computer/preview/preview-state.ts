/** What the preview pane shows: its state, as the dock, the tools and the events carry it. */

/** What the dock's preview pane shows (the dock's DockPreview). */
export interface PreviewState {
  [key: string]: unknown;
  /** Guest path last navigated to, e.g. `/index.html?x=1#top`. */
  path: string | null;
  /** Where the pane points: the path under the preview's base path. */
  url: string | null;
  port: number | null;
  status: 'idle' | 'loading' | 'ready' | 'unreachable';
  message: string | null;
  /** Grows with every navigation request, so the same path can be reloaded. */
  navigation: number;
  /** The job whose processes served the page when it was probed (null when unknown). */
  jobId: string | null;
  /** Set when that job ended since: the page's server is gone with it. */
  jobEnded: { jobId: string; state: string } | null;
}
