// What capabilities/discoverV2 reads out of a skill's files, as the reference reads them
// (codex 0.169 and 0.171, measured side by side: test/interop/capability-discovery-v2.test.ts):
// - SKILL.md: a YAML front matter between a first line `---` and the next line `---` (lines
//   trimmed of Unicode white space, a byte-order mark is not white space); `name` (else the
//   directory's name), `description` (required), `metadata.short-description`. Scalars are
//   taken as their text (`123` is "123"), each value folded to one line; a name over 64
//   characters, a sequence or mapping where a scalar belongs, a duplicate key, or YAML that
//   stays invalid after the repair below make the skill invalid.
// - Invalid YAML is tried once more with every plain `key: value` outside a block scalar
//   quoted (Codex's repair of unquoted values holding `: ` or a flow indicator).
// - agents/openai.yaml: `dependencies.tools` (entries without `type` or `value` left out, an
//   empty list is no dependencies) and `policy` (`allow_implicit_invocation`, `products`
//   matched without case); any malformed part leaves both null, never the skill out.
import type * as YAML from 'yaml';

// Required on first use (esbuild keeps a require() inside a function lazy within the bundle):
// evaluated at start, the parser's 72 modules cost every server ~4 MiB of memory for as long as
// it runs, and most never read a skill.
let yamlModule: typeof YAML | undefined;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const yaml = (): typeof YAML => (yamlModule ??= require('yaml') as typeof YAML);

export const MAX_SKILL_NAME_CHARS = 64;

export interface SkillFrontMatter {
  name: string;
  description: string;
  shortDescription: string | null;
}

export interface SkillToolDependency {
  type: string;
  value: string;
  description: string | null;
  transport: string | null;
  command: string | null;
  url: string | null;
  oauthCallbackPort: number | null;
}
export interface SkillMetadata {
  dependencies: { tools: SkillToolDependency[] } | null;
  policy: { allowImplicitInvocation: boolean | null; products: string[] } | null;
}

/** Rust's char::is_whitespace (Unicode White_Space); JavaScript's \s also takes U+FEFF, which Rust does not. */
const WS = '\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const TRIM = new RegExp(`^[${WS}]+|[${WS}]+$`, 'g');
const RUNS = new RegExp(`[${WS}]+`);
const rustTrim = (s: string) => s.replace(TRIM, '');
/** split_whitespace().join(" "). */
export const singleLine = (s: string) => s.split(RUNS).filter((w) => w.length > 0).join(' ');
const chars = (s: string) => [...s].length;

class Invalid extends Error {}

/** The lines between the opening and the closing `---`, or undefined (no front matter). */
function frontMatterOf(contents: string): string | undefined {
  // str::lines: split at \n, one trailing \r dropped, no empty last line.
  const lines = contents.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  if (lines.length === 0 || rustTrim(lines[0]) !== '---') return undefined;
  const body: string[] = [];
  for (let i = 1; i < lines.length; i++) {
    if (rustTrim(lines[i]) === '---') return body.length > 0 ? body.join('\n') : undefined;
    body.push(lines[i]);
  }
  return undefined;
}

const BLOCK_SCALAR = /^[|>][-+0-9]*\s*(#.*)?$/;
const KEY_VALUE = /^(\s*(?:-\s+)?)([^\s#'"\-?:][^:]*?|-[^\s:][^:]*?):(\s+)(\S.*?)\s*$/;

/** Plain values quoted (outside block scalars), the repair Codex tries when the YAML is invalid. */
function repaired(text: string): string {
  let blockIndent = -1;
  return text
    .split('\n')
    .map((line) => {
      const indent = line.length - line.trimStart().length;
      if (blockIndent >= 0) {
        if (line.trim() === '' || indent > blockIndent) return line;
        blockIndent = -1;
      }
      const m = KEY_VALUE.exec(line);
      if (!m) return line;
      const value = m[4];
      if (BLOCK_SCALAR.test(value)) {
        blockIndent = indent;
        return line;
      }
      if (/^["']/.test(value) || /^(~|null|Null|NULL)$/.test(value)) return line;
      return `${m[1]}${m[2]}:${m[3]}${JSON.stringify(value)}`;
    })
    .join('\n');
}

function parseYaml(text: string): YAML.Document.Parsed | undefined {
  // failsafe: every scalar is its text, as serde reads a number or a boolean into a String.
  const doc = yaml().parseDocument(text, { schema: 'failsafe', uniqueKeys: true, prettyErrors: false });
  return doc.errors.length === 0 ? doc : undefined;
}

const isNull = (n: unknown) => n === null || n === undefined || (yaml().isScalar(n) && n.type === 'PLAIN' && /^(|~|null|Null|NULL)$/.test(String(n.value)));

/** An optional string field: null when absent or null; Invalid for a sequence or mapping. */
function optString(map: YAML.YAMLMap, key: string): string | null {
  const n = map.get(key, true);
  if (isNull(n)) return null;
  if (yaml().isScalar(n)) return String(n.value);
  throw new Invalid(`invalid type for ${key}`);
}
/** An optional mapping field: undefined when absent or null; Invalid for anything else. */
function optMap(map: YAML.YAMLMap, key: string): YAML.YAMLMap | undefined {
  const n = map.get(key, true);
  if (isNull(n)) return undefined;
  if (yaml().isMap(n)) return n;
  throw new Invalid(`invalid type for ${key}`);
}
function rootMap(doc: YAML.Document.Parsed): YAML.YAMLMap {
  if (yaml().isMap(doc.contents)) return doc.contents;
  throw new Invalid('not a mapping');
}

/**
 * The skill's name, description and short description, or undefined when the reference leaves
 * the skill out (with its one warning). `dirName`: the SKILL.md's directory name, the name a
 * front matter without one gets.
 */
export function parseSkillFrontMatter(contents: string, dirName: string): SkillFrontMatter | undefined {
  const text = frontMatterOf(contents);
  if (text === undefined) return undefined;
  const doc = parseYaml(text) ?? parseYaml(repaired(text));
  if (!doc) return undefined;
  try {
    const map = rootMap(doc);
    const rawName = optString(map, 'name');
    const rawDescription = optString(map, 'description');
    const meta = optMap(map, 'metadata');
    const rawShort = meta ? optString(meta, 'short-description') : null;
    let name = rawName === null ? '' : singleLine(rawName);
    if (name === '') name = singleLine(dirName) || 'skill';
    const description = rawDescription === null ? '' : singleLine(rawDescription);
    const short = rawShort === null ? '' : singleLine(rawShort);
    if (description === '' || chars(name) > MAX_SKILL_NAME_CHARS) return undefined;
    return { name, description, shortDescription: short === '' ? null : short };
  } catch (e) {
    if (e instanceof Invalid) return undefined;
    throw e;
  }
}

const PRODUCTS = ['chatgpt', 'codex', 'atlas'];

function optBool(map: YAML.YAMLMap, key: string): boolean | null {
  const n = map.get(key, true);
  if (isNull(n)) return null;
  if (yaml().isScalar(n) && n.type === 'PLAIN') {
    if (/^(true|True|TRUE)$/.test(String(n.value))) return true;
    if (/^(false|False|FALSE)$/.test(String(n.value))) return false;
  }
  throw new Invalid(`invalid type for ${key}`);
}

/** agents/openai.yaml's dependencies and policy; both null when there is no file or it does not decode. */
export function parseSkillMetadata(contents: string | null): SkillMetadata {
  const none: SkillMetadata = { dependencies: null, policy: null };
  if (contents === null) return none;
  const doc = parseYaml(contents);
  if (!doc) return none;
  try {
    if (isNull(doc.contents)) return none;
    const map = rootMap(doc);
    const iface = optMap(map, 'interface');
    if (iface) for (const k of ['display_name', 'short_description', 'icon_small', 'icon_large', 'brand_color', 'default_prompt']) optString(iface, k);
    let dependencies: SkillMetadata['dependencies'] = null;
    const deps = optMap(map, 'dependencies');
    if (deps) {
      const toolsNode = deps.get('tools', true);
      const tools: SkillToolDependency[] = [];
      if (!isNull(toolsNode)) {
        if (!yaml().isSeq(toolsNode)) throw new Invalid('tools');
        for (const item of toolsNode.items) {
          if (!yaml().isMap(item)) throw new Invalid('tool');
          const t = {
            type: optString(item, 'type'),
            value: optString(item, 'value'),
            description: optString(item, 'description'),
            transport: optString(item, 'transport'),
            command: optString(item, 'command'),
            url: optString(item, 'url'),
          };
          if (t.type === null || t.value === null) continue;
          tools.push({ ...t, type: t.type, value: t.value, oauthCallbackPort: null });
        }
      }
      if (tools.length > 0) dependencies = { tools };
    }
    let policy: SkillMetadata['policy'] = null;
    const pol = optMap(map, 'policy');
    if (pol) {
      const allowImplicitInvocation = optBool(pol, 'allow_implicit_invocation');
      const productsNode = pol.get('products', true);
      const products: string[] = [];
      if (!isNull(productsNode)) {
        if (!yaml().isSeq(productsNode)) throw new Invalid('products');
        for (const p of productsNode.items) {
          if (!yaml().isScalar(p)) throw new Invalid('product');
          const known = PRODUCTS.find((k) => k === String(p.value).toLowerCase());
          if (!known) throw new Invalid('product');
          products.push(known);
        }
      }
      policy = { allowImplicitInvocation, products };
    }
    return { dependencies, policy };
  } catch (e) {
    if (e instanceof Invalid) return none;
    throw e;
  }
}
