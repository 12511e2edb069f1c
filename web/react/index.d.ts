// framestream/react: types of index.js (hand-written).
import type { CSSProperties, ReactElement } from 'react';
import type { ConnectOptions, FramestreamClient, FrameView } from '../framestream.js';

/** Connect on mount, close on unmount; null until the client exists (the first render). */
export function useFramestreamClient(options: ConnectOptions): FramestreamClient | null;

export interface FrameProps {
  /** The client whose WebSocket carries the frame; nothing is shown while it is null. */
  client: FramestreamClient | null;
  /** The frame's id. */
  frame: string;
  /** Send this viewer's input (needs a drive token). Default: when the client's token is a drive grant, known once a token function has answered. */
  drive?: boolean;
  /** The tab UI: pages, navigation, dialogs, file choosers, downloads, copied text. Default true. */
  tabs?: boolean;
  showStats?: boolean;
  title?: string;
  /** While the frame's view is out of sight (panned or scrolled away), watch it without pictures: it may pause.
   * Default true. */
  pauseOffscreen?: boolean;
  className?: string;
  style?: CSSProperties;
  /** The mounted view (mountFrame's), and null when it is destroyed. */
  onView?: (view: FrameView | null) => void;
}

/** One frame: mounts the library's frame view, follows its container's width, cleans up on unmount. */
export function Frame(props: FrameProps): ReactElement;
