// framestream/react: a frame in a React app. `useFramestreamClient(options)` opens one client (one WebSocket) for
// the component that holds it and closes it on unmount; `<Frame client frame drive />` mounts the library's frame
// view (mountFrame, and the tab UI) into a div, follows its container's width, and on unmount (or when `client`,
// `frame` or `drive` change) destroys it: the frame is unwatched, its decoder closed. No JSX, no build step.

import { createElement, useEffect, useRef, useState } from 'react';
import { connect, mountFrame, mountTabUi } from '../framestream.js';

/**
 * Connect on mount, close on unmount. `options` are connect()'s, read when the component mounts (pass a token
 * function to give fresh tokens); `null` until the client exists (the first render).
 */
export function useFramestreamClient(options) {
  const [client, setClient] = useState(null);
  const latest = useRef(options);
  latest.current = options;
  useEffect(() => {
    const c = connect(latest.current);
    setClient(c);
    return () => {
      c.close();
      setClient(null);
    };
  }, []);
  return client;
}

// The role of the client's current token (null before a token function has given one), read as the frame renders
// and rendered again on every connection's `open`: a token function's first token, or another role on reconnect.
// Read in render, not kept in state, so a token known at mount mounts the view once.
function useTokenRole(client) {
  const [, setSeen] = useState(null);
  useEffect(() => {
    if (!client) return undefined;
    const off = client.on('open', () => setSeen(client.role));
    setSeen(client.role); // a token that arrived between the render and this subscription
    return off;
  }, [client]);
  return client?.role ?? null;
}

// The client as a view-only viewer sees it: mountFrame attaches input only when the token's role is `drive`.
function viewOnly(client) {
  return new Proxy(client, {
    get(target, prop) {
      if (prop === 'role') return 'view';
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * One frame: `client` (a FramestreamClient, e.g. from useFramestreamClient; nothing is shown while null), `frame`
 * (its id), `drive` (send this viewer's input; default: when the client's token is a drive grant; false shows a
 * drive token view-only). `tabs` (default true) adds the tab UI (pages, navigation, dialogs, downloads);
 * `showStats`, `title` and `pauseOffscreen` (default true: out of sight, the frame is watched without pictures) go
 * to mountFrame; `onView(view)` hears the mounted view (null on cleanup).
 */
export function Frame({ client, frame, drive, tabs = true, showStats = false, title, pauseOffscreen = true, className,
  style, onView }) {
  const ref = useRef(null);
  const onViewRef = useRef(onView);
  onViewRef.current = onView;
  // The token's role, known only once a token function has answered: the view is mounted again when it arrives,
  // so a drive grant from a function drives (mounted before it, the view would stay view-only).
  const role = useTokenRole(client);
  useEffect(() => {
    const container = ref.current;
    if (!client || !container || !frame) return undefined;
    const drives = drive ?? role === 'drive';
    const view = mountFrame(drives ? client : viewOnly(client), frame, container,
      { showStats, title, pauseOffscreen });
    const tabUi = tabs ? mountTabUi(client, view, { drive: drives && role === 'drive' }) : null;
    onViewRef.current?.(view);
    return () => {
      tabUi?.destroy();
      view.destroy();
      onViewRef.current?.(null);
    };
  }, [client, frame, drive, tabs, role, pauseOffscreen]);
  return createElement('div', {
    ref, className, 'data-framestream-frame': frame, style: { maxWidth: '100%', ...style },
  });
}
