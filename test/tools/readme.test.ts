// The README is for users (docs/architecture.md, "One owner each"): 8–12 KB, the extension before development, the screenshots
// of the flows (docs/extension.md) present as files, and every link to a file of the repository resolving.
// Detail belongs in docs/: a README that grows past 12 KB fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from '../support/cli';

const readmePath = path.join(repoRoot, 'README.md');
const readme = readFileSync(readmePath, 'utf8');
/** Level-2 headings, in order. */
const headings = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1].trim());

test('the README is between 8 and 12 KB', () => {
  const size = Buffer.byteLength(readme);
  assert.ok(size >= 8 * 1024 && size <= 12 * 1024, `README.md is ${size} bytes; keep it within 8–12 KB (move detail to docs/)`);
});

test('the README opens with the extension: install and first steps come before the CLI, security and development', () => {
  const at = (h: string) => {
    const i = headings.indexOf(h);
    assert.ok(i >= 0, `README.md has a "## ${h}" section (has: ${headings.join(' · ')})`);
    return i;
  };
  const install = at('Install the extension');
  const firstSteps = at('First steps in VS Code');
  assert.ok(install < firstSteps, 'install before first steps');
  for (const later of ['The CLI', 'Security', 'Development']) assert.ok(firstSteps < at(later), `first steps before "${later}"`);
  assert.equal(headings[headings.length - 1], 'Development', 'development is the last section');
});

test('the README shows the new flows\' screenshots, and every image and linked file exists', () => {
  const images = [...readme.matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]);
  for (const shot of ['ux-connect-to-host', 'ux-add-environment', 'ux-open-remote-folder', 'ux-remote-search', 'ux-terminal-reconnect', 'ux-walkthrough']) {
    assert.ok(images.includes(`docs/screenshots/${shot}.png`), `README.md shows docs/screenshots/${shot}.png (images: ${images.join(', ')})`);
  }
  const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((l) => !/^[a-z]+:/.test(l) && !l.startsWith('#'));
  assert.ok(links.length > images.length, 'the README links to docs as well as images');
  for (const link of links) {
    const file = link.split('#')[0];
    assert.ok(existsSync(path.join(repoRoot, file)), `README.md links to ${file}, which does not exist`);
  }
});
