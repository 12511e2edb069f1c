// A Vite-style React app built with esbuild from the installed package (tests/npm/test_react_browser.py): one
// client for the app (useFramestreamClient) and a <Frame/>; the test reads the canvas, resizes the container and
// unmounts the whole tree through window.fsTest.
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { Frame, useFramestreamClient } from 'framestream/react';

const cfg = Object.fromEntries(new URLSearchParams(location.hash.slice(1)));

function App() {
  const client = useFramestreamClient({ token: cfg.token, url: cfg.ws });
  const [width, setWidth] = useState(640);
  window.fsTest.setWidth = setWidth;
  window.fsTest.client = client;
  return (
    <div id="box" style={{ width }}>
      <Frame client={client} frame={cfg.frame} drive={false} tabs={false} onView={(v) => { window.fsTest.view = v; }} />
    </div>
  );
}

const root = createRoot(document.getElementById('root'));
window.fsTest.unmount = () => root.unmount();
root.render(<App />);
