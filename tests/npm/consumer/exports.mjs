// Run in the scratch app: every entry of the installed package exports at run time exactly the values its
// hand-written .d.ts declares (so the types cannot drift from the modules), and nothing else.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const root = dirname(createRequire(import.meta.url).resolve('framestream/package.json'));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const declared = (file) => new Set([...readFileSync(join(root, file), 'utf8')
  .matchAll(/^export (?:declare )?(?:function|class|const|namespace) (\w+)/gm)].map((m) => m[1]));
const result = {};
for (const [entry, spec] of Object.entries(pkg.exports)) {
  if (entry === './package.json') continue;
  const name = entry === '.' ? 'framestream' : `framestream/${entry.slice(2)}`;
  const runtime = new Set(Object.keys(await import(name)));
  const types = declared(spec.types);
  result[name] = {
    missingTypes: [...runtime].filter((n) => !types.has(n)).sort(),
    missingValues: [...types].filter((n) => !runtime.has(n)).sort(),
    names: [...runtime].sort(),
  };
}
console.log(JSON.stringify(result));
