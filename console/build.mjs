// Builds the console into dist/: hashed, minified assets (and their gzip) plus index.html.
// The node's build embeds dist/ (build.rs); the README's example queries come from README.md.

import { build } from 'esbuild';
import { readFileSync, writeFileSync, rmSync, mkdirSync, readdirSync } from 'node:fs';
import { gzipSync, constants } from 'node:zlib';
import { dirname, join, basename } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');

/** The README's `<!-- analyst-query: name -->` blocks: the query and the paragraph before it. */
export function readmeExamples(readme) {
  const out = [];
  const marker = /<!-- analyst-query: ([a-z0-9-]+) -->\n```sparql\n([\s\S]*?)\n```/g;
  for (const m of readme.matchAll(marker)) {
    const before = readme.slice(0, m.index).trimEnd().split(/\n\s*\n/).pop() || '';
    const description = before.startsWith('#') || before.startsWith('```') ? '' : before.replace(/\s+/g, ' ').trim();
    const scope = /scope=(own|shared|all)/.exec(description);
    const title = m[1].replace(/-/g, ' ').replace(/^./, (c) => c.toUpperCase());
    out.push({ name: m[1], title, description, query: m[2], ...(scope ? { scope: scope[1] } : {}) });
  }
  return out;
}

const examples = {
  name: 'examples',
  setup(b) {
    b.onResolve({ filter: /^examples$/ }, () => ({ path: join(here, '..', 'README.md'), namespace: 'examples' }));
    b.onLoad({ filter: /.*/, namespace: 'examples' }, (args) => {
      const list = readmeExamples(readFileSync(args.path, 'utf8'));
      if (!list.length) throw new Error('README.md has no analyst-query examples');
      return { contents: `export default ${JSON.stringify(list)};`, loader: 'js', watchFiles: [args.path] };
    });
  },
};

rmSync(dist, { recursive: true, force: true });
mkdirSync(join(dist, 'assets'), { recursive: true });
const result = await build({
  entryPoints: [join(here, 'src', 'main.js')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome110', 'firefox115', 'safari16'],
  entryNames: 'app-[hash]',
  outdir: join(dist, 'assets'),
  metafile: true,
  legalComments: 'eof',
  plugins: [examples],
  logLevel: 'warning',
});
const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const js = outputs.find((f) => f.endsWith('.js'));
const css = outputs.find((f) => f.endsWith('.css'));
if (!js || !css) throw new Error(`unexpected build outputs: ${outputs.join(', ')}`);
const html = readFileSync(join(here, 'index.html'), 'utf8').replace('{{js}}', js).replace('{{css}}', css);
writeFileSync(join(dist, 'index.html'), html);
let total = 0;
for (const file of readdirSync(join(dist, 'assets'))) {
  const path = join(dist, 'assets', file);
  const gz = gzipSync(readFileSync(path), { level: constants.Z_BEST_COMPRESSION });
  writeFileSync(`${path}.gz`, gz);
  total += gz.length;
}
console.log(`console: ${js}, ${css}; ${total} bytes gzipped`);
