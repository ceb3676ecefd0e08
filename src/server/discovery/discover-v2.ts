// capabilities/discoverV2: the skills and installed plugins of this host's Codex home, parsed
// (the reference's shapes, order, bounds and warnings; codex 0.169 and 0.171 measured side by
// side: test/interop/capability-discovery-v2.test.ts). Each location is scanned exactly as a
// capabilityRoots/discoverV1 root (./roots.ts: depth 6, byte order, directory links followed
// once, linked files never read, 1 MiB per file), then each SKILL.md's front matter is parsed
// (./front-matter.ts). Locations, in order:
// - `codex-home-skills`: <CODEX_HOME>/skills, where CODEX_HOME is the server's environment
//   variable, else ~/.codex (as the reference, which reads its own home, not the client's);
// - `user-agent-skills`: ~/.agents/skills;
// - every installed plugin, <CODEX_HOME>/plugins/cache/<marketplace>/<plugin>/<version> (the
//   version `local` if there is one, else the highest: semantic versions compared as such),
//   its skills namespaced `<plugin name>:<skill>`.
// A missing or unreadable location is no warning; a location with any failure (an invalid
// SKILL.md, a plugin without a readable manifest, an unreadable file) adds one warning.
// Under a managed `sandbox` every location is read as a process in that sandbox would see it
// (the reference runs discovery in its sandbox helper): ./roots.ts judges each directory and
// file where /proc says it really is, and the plugin cache is listed the same way.
import fs, { constants as C } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CapabilityRootResult } from '../../protocol/types';
import { realOf, at } from '../fs/confined';
import { pathToUri } from '../paths';
import type { SandboxProfile } from '../sandbox/profile';
import { discoverRoot, viewOf, type View } from './roots';
import { parseSkillFrontMatter, parseSkillMetadata, singleLine, type SkillMetadata } from './front-matter';

const fsp = fs.promises;

const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
const MAX_CAPABILITIES = 2048;
const MAX_WARNINGS = 64;
/** namespace, ':' and a 64-character name. */
const MAX_QUALIFIED_NAME_CHARS = 64 * 2 + 1;
export const INCOMPLETE = 'some capability metadata could not be loaded; discovery may be incomplete';
export const SIZE_LIMIT = 'capability discovery size limit reached';

export interface ExecutorSkill extends SkillMetadata {
  name: string;
  description: string;
  shortDescription: string | null;
  path: string;
  discoveryRoot?: { id: string; path: string };
}
export interface ExecutorPlugin {
  id: string;
  displayName: string;
  remotePluginId: string | null;
  version: string;
  root: string;
  files: NonNullable<CapabilityRootResult['plugin']>;
  skills: ExecutorSkill[];
}
export interface DiscoverV2Result {
  plugins: ExecutorPlugin[];
  skills: ExecutorSkill[];
  warnings: string[];
}

interface Location {
  root: string;
  /** A standalone skills root (its id), or an installed plugin. */
  rootId?: string;
  plugin?: { id: string; version: string };
}

/** The Codex home this server reads: $CODEX_HOME, else ~/.codex (the reference's rule). */
export function codexHome(env: NodeJS.ProcessEnv = process.env): string {
  const v = env.CODEX_HOME;
  return v && v.length > 0 ? path.resolve(v) : path.join(os.homedir(), '.codex');
}

/** The names of the directories in `dir` as the sandbox sees it (none when it is missing or hidden). */
async function subdirs(dir: string, view: View): Promise<string[]> {
  let fh: fs.promises.FileHandle;
  try {
    fh = await fsp.open(dir, C.O_RDONLY | C.O_DIRECTORY);
  } catch {
    return [];
  }
  try {
    if (view(realOf(fh.fd)) !== 'read') return [];
    const out: string[] = [];
    for (const name of await fsp.readdir(at(fh.fd))) {
      const st = await fsp.lstat(at(fh.fd, name)).catch(() => undefined);
      if (st?.isDirectory()) out.push(name);
    }
    return out;
  } catch {
    return [];
  } finally {
    await fh.close().catch(() => undefined);
  }
}

const SEGMENT = /^[A-Za-z0-9_-]+$/;
const VERSION = /^[A-Za-z0-9._+-]+$/;
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

function byteCompare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
/** semver's precedence (build metadata ignored, then compared as text, as the Rust crate). */
function semverCompare(a: RegExpExecArray, b: RegExpExecArray, ta: string, tb: string): number {
  for (let i = 1; i <= 3; i++) {
    const d = BigInt(a[i]) - BigInt(b[i]);
    if (d !== 0n) return d < 0n ? -1 : 1;
  }
  const pa = a[4], pb = b[4];
  if (pa === undefined || pb === undefined) {
    if (pa !== pb) return pa === undefined ? 1 : -1;
  } else {
    const xa = pa.split('.'), xb = pb.split('.');
    for (let i = 0; i < Math.min(xa.length, xb.length); i++) {
      const na = /^\d+$/.test(xa[i]), nb = /^\d+$/.test(xb[i]);
      let c: number;
      if (na && nb) c = BigInt(xa[i]) < BigInt(xb[i]) ? -1 : BigInt(xa[i]) > BigInt(xb[i]) ? 1 : 0;
      else if (na !== nb) c = na ? -1 : 1;
      else c = byteCompare(xa[i], xb[i]);
      if (c !== 0) return c;
    }
    if (xa.length !== xb.length) return xa.length < xb.length ? -1 : 1;
  }
  return byteCompare(ta, tb);
}
export function compareVersions(a: string, b: string): number {
  const sa = SEMVER.exec(a), sb = SEMVER.exec(b);
  return sa && sb ? semverCompare(sa, sb, a, b) : byteCompare(a, b);
}

async function pluginLocations(home: string, view: View): Promise<Location[]> {
  const cache = path.join(home, 'plugins', 'cache');
  const out: Location[] = [];
  for (const marketplace of (await subdirs(cache, view)).filter((n) => SEGMENT.test(n)).sort(byteCompare)) {
    for (const plugin of (await subdirs(path.join(cache, marketplace), view)).filter((n) => SEGMENT.test(n)).sort(byteCompare)) {
      const versions = (await subdirs(path.join(cache, marketplace, plugin), view)).filter((v) => VERSION.test(v) && v !== '.' && v !== '..');
      if (versions.length === 0) continue;
      const version = versions.includes('local') ? 'local' : versions.sort(compareVersions)[versions.length - 1];
      out.push({ root: path.join(cache, marketplace, plugin, version), plugin: { id: `${plugin}@${marketplace}`, version } });
    }
  }
  return out;
}

/** A manifest's `name` (blank: the plugin root's directory name), or undefined when it is not a JSON object. */
function manifestName(contents: string, root: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(contents);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const name = (parsed as { name?: unknown }).name;
  if (name !== undefined && name !== null && typeof name !== 'string') return undefined;
  return typeof name === 'string' && name.trim() !== '' ? name : path.basename(root);
}
function displayNameOf(contents: string, fallback: string): string {
  try {
    const m = JSON.parse(contents) as { interface?: { displayName?: unknown } };
    const d = m?.interface?.displayName;
    if (typeof d === 'string' && d.trim() !== '') return d;
  } catch {
    // the manifest was judged by manifestName already
  }
  return fallback;
}

interface Discovery {
  plugin?: ExecutorPlugin;
  skills: ExecutorSkill[];
  warnings: string[];
}

async function discoverLocation(loc: Location, sandbox: SandboxProfile, view: View): Promise<Discovery> {
  const empty: Discovery = { skills: [], warnings: [] };
  // A missing root, a file, or one the sandbox does not show: nothing to report, no warning.
  try {
    const st = await fsp.stat(loc.root);
    if (!st.isDirectory()) return empty;
    if (sandbox.kind === 'managed' && view(await fsp.realpath(loc.root)) === 'absent') return empty;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EACCES' || code === 'ENOTDIR') return empty;
    return { skills: [], warnings: [`could not inspect capability root ${pathToUri(loc.root)}: ${(e as Error).message}`] };
  }
  const v1 = await discoverRoot({ id: loc.plugin?.id ?? '', path: loc.root, sandbox });
  const warnings = [...v1.warnings, ...(v1.error ? [v1.error] : [])];
  // A manifest that is not a JSON object names no plugin (the reference drops it with a warning).
  if (loc.plugin && (!v1.plugin || manifestName(v1.plugin.manifest.contents, loc.root) === undefined)) {
    warnings.push(`installed plugin at ${pathToUri(loc.root)} has no readable manifest`);
    return { skills: [], warnings };
  }
  // First manifest per directory; a skill takes the nearest one's name as its namespace.
  const namespaces = new Map<string, string>();
  for (const m of v1.namespaceManifests) {
    const root = path.dirname(path.dirname(fileURLToPath(m.path)));
    const name = manifestName(m.contents, root);
    if (name !== undefined && !namespaces.has(root)) namespaces.set(root, name);
  }
  const skills: ExecutorSkill[] = [];
  for (const s of v1.skills) {
    const file = fileURLToPath(s.instructions.path);
    const parsed = parseSkillFrontMatter(s.instructions.contents, path.basename(path.dirname(file)));
    if (!parsed) {
      warnings.push(`invalid skill metadata at ${s.instructions.path}`);
      continue;
    }
    let namespace: string | undefined;
    for (let d = path.dirname(file); ; d = path.dirname(d)) {
      namespace = namespaces.get(d);
      if (namespace !== undefined || d === path.dirname(d)) break;
    }
    if (namespace !== undefined && [...namespace].length + 1 + [...parsed.name].length > MAX_QUALIFIED_NAME_CHARS) {
      warnings.push(`invalid skill metadata at ${s.instructions.path}: qualified name exceeds ${MAX_QUALIFIED_NAME_CHARS} characters`);
      continue;
    }
    const skill: ExecutorSkill = {
      name: namespace !== undefined ? `${namespace}:${parsed.name}` : parsed.name,
      description: parsed.description,
      shortDescription: parsed.shortDescription,
      path: s.instructions.path,
      ...(loc.rootId ? { discoveryRoot: { id: loc.rootId, path: pathToUri(loc.root) } } : {}),
      ...parseSkillMetadata(s.metadata?.contents ?? null),
    };
    skills.push(skill);
  }
  if (loc.plugin && v1.plugin) {
    const fallback = manifestName(v1.plugin.manifest.contents, loc.root) ?? path.basename(loc.root);
    const plugin: ExecutorPlugin = {
      id: loc.plugin.id,
      displayName: displayNameOf(v1.plugin.manifest.contents, singleLine(fallback) || fallback),
      remotePluginId: null,
      version: loc.plugin.version,
      root: pathToUri(loc.root),
      files: v1.plugin,
      skills,
    };
    return { plugin, skills: [], warnings };
  }
  return { skills, warnings };
}

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

export async function discoverV2(sandbox: SandboxProfile, env: NodeJS.ProcessEnv = process.env): Promise<DiscoverV2Result> {
  const view = viewOf(sandbox);
  const home = codexHome(env);
  const locations: Location[] = [
    { root: path.join(home, 'skills'), rootId: 'codex-home-skills' },
    { root: path.join(os.homedir(), '.agents', 'skills'), rootId: 'user-agent-skills' },
    ...(await pluginLocations(home, view)),
  ];
  const result: DiscoverV2Result = { plugins: [], skills: [], warnings: [] };
  let count = 0;
  let bytes = 0;
  let truncated = false;
  const admit = (n: number, size: number) => {
    if (count + n > MAX_CAPABILITIES || bytes + size > MAX_RESPONSE_BYTES) {
      truncated = true;
      return false;
    }
    count += n;
    bytes += size;
    return true;
  };
  for (let i = 0; i < locations.length; i++) {
    const d = await discoverLocation(locations[i], sandbox, view);
    // One warning per location that had any failure, whatever the failures were.
    if (d.warnings.length > 0 && result.warnings.length < MAX_WARNINGS) result.warnings.push(INCOMPLETE);
    if (d.plugin) {
      const remaining = MAX_CAPABILITIES - count;
      if (remaining === 0) truncated = true;
      else {
        if (d.plugin.skills.length > remaining - 1) {
          truncated = true;
          d.plugin.skills.length = remaining - 1;
        }
        if (admit(1 + d.plugin.skills.length, jsonBytes(d.plugin))) result.plugins.push(d.plugin);
      }
    } else {
      for (const s of d.skills) {
        if (count === MAX_CAPABILITIES) {
          truncated = true;
          break;
        }
        if (admit(1, jsonBytes(s))) result.skills.push(s);
      }
    }
    if ((count === MAX_CAPABILITIES || bytes === MAX_RESPONSE_BYTES) && i + 1 < locations.length) {
      truncated = true;
      break;
    }
  }
  result.plugins.sort((a, b) => byteCompare(a.id, b.id) || byteCompare(a.root, b.root));
  if (truncated || jsonBytes(result) > MAX_RESPONSE_BYTES) {
    result.warnings = [SIZE_LIMIT, ...result.warnings.slice(0, MAX_WARNINGS - 1)];
    while (jsonBytes(result) > MAX_RESPONSE_BYTES) {
      if (result.warnings.length > 1) result.warnings.length = 1;
      else if (result.skills.pop() === undefined && result.plugins.pop() === undefined) break;
    }
  }
  return result;
}
