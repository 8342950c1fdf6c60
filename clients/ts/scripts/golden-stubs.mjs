// Copies the TypeScript stubs of the generator's golden files
// (internal/gen/testdata/*.txt, the "-- routes.ts --" sections) into
// build/golden/, where `tsc -p tsconfig.examples.json` type-checks them
// with --strict beside the example game's committed stubs: what
// `gateway gen -lang ts` writes must compile against this package.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const testdata = path.join(here, '..', '..', '..', 'internal', 'gen', 'testdata');
const out = path.join(here, '..', 'build', 'golden');
mkdirSync(out, { recursive: true });
let n = 0;
for (const file of readdirSync(testdata).filter((f) => f.endsWith('.txt'))) {
  const text = readFileSync(path.join(testdata, file), 'utf8');
  const m = /^-- routes\.ts --\n([\s\S]*?)(?=^-- [^\n]+ --$|(?![\s\S]))/m.exec(text);
  if (!m) throw new Error(`${file}: no routes.ts section`);
  writeFileSync(path.join(out, file.replace(/\.txt$/, '.ts')), m[1]);
  n++;
}
if (n === 0) throw new Error(`no golden files in ${testdata}`);
