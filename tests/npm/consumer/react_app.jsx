// A Vite-style React app built with esbuild from the installed package (tests/npm/test_react_browser.py): one
// client for the app (useFramestreamClient) and a <Frame/>; the test reads the canvas, resizes the container and
// unmounts the whole tree through window.fsTest. The fragment says how: `fn=1` passes the token as a function that
// answers after a while, as an app's fetch of a fresh token from its server does; `drive=0|1` sets the prop
// (absent: the default, from the token's role).
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { Frame, useFramestreamClient } from 'framestream/react';

const cfg = Object.fromEntries(new URLSearchParams(location.hash.slice(1)));

const fetchedToken = () => new Promise((resolve) => { setTimeout(() => resolve(cfg.token), 300); });

function App() {
  const client = useFramestreamClient({ token: cfg.fn === '1' ? fetchedToken : cfg.token, url: cfg.ws });
  const drive = cfg.drive === undefined ? undefined : cfg.drive === '1';
  const [width, setWidth] = useState(640);
  window.fsTest.setWidth = setWidth;
  window.fsTest.client = client;
  return (
    <div id="box" style={{ width }}>
      <Frame client={client} frame={cfg.frame} drive={drive} tabs={false} onView={(v) => { window.fsTest.view = v; }} />
    </div>
  );
}

const root = createRoot(document.getElementById('root'));
window.fsTest.unmount = () => root.unmount();
root.render(<App />);
