// Bundles the browser entry point (src/index.ts) into one ES module for the
// example game's page: examples/web/shield.js, committed, so that the
// gateway embeds and serves it at /play/shield.js without npm. Run
// `npm run build:demo` after changing src/; test/demo-bundle.test.ts fails
// while the committed copy is stale.
//
// With --check it writes nothing and exits 1 when the committed copy differs.
import { build } from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const demoBundle = path.join(here, '..', '..', '..', 'examples', 'web', 'shield.js');

/** The bundle's text, as build:demo writes it. */
export async function bundle() {
  const pkg = JSON.parse(readFileSync(path.join(here, '..', 'package.json'), 'utf8'));
  const out = await build({
    entryPoints: [path.join(here, '..', 'src', 'index.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    legalComments: 'none',
    charset: 'utf8',
    banner: {
      js: `// ${pkg.name} ${pkg.version}, the browser entry point bundled by \`npm run build:demo\` (clients/ts). DO NOT EDIT.`,
    },
    logLevel: 'silent',
  });
  return out.outputFiles[0].text;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = await bundle();
  if (process.argv.includes('--check')) {
    const committed = readFileSync(demoBundle, 'utf8');
    if (committed !== text) {
      console.error(`${demoBundle} is stale: run npm run build:demo in clients/ts`);
      process.exit(1);
    }
  } else {
    writeFileSync(demoBundle, text);
    console.log(`${demoBundle}: ${Buffer.byteLength(text)} bytes`);
  }
}
