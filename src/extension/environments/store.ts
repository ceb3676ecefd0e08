// Environment definitions: the built-in `Local` one plus those in the `execServer.environments`
// setting. Tokens never go to settings: they live in SecretStorage. Free of `vscode` — the
// host injects the settings and secrets access so the validation is unit-tested.

export type EnvironmentKind = 'local' | 'websocket' | 'command';
export const LOCAL_ENVIRONMENT = 'Local';

export interface EnvironmentConfig {
  name: string;
  kind: EnvironmentKind;
  url?: string;
  command?: string;
  args?: string[];
}

export interface AddEnvironmentInput {
  name: string;
  url?: string;
  token?: string;
  command?: string;
  args?: string[];
}

/** The settings entry shape (what `execServer.environments` holds). */
export interface EnvironmentSetting {
  name: string;
  url?: string;
  command?: string;
  args?: string[];
}

export interface SettingsAccess {
  /** Raw value of `execServer.environments` (untrusted: may be anything). */
  read(): unknown;
  /** The list that write() replaces, if it differs from read() (e.g. user settings only). */
  readForWrite?(): unknown;
  write(value: EnvironmentSetting[]): Promise<void>;
}

export interface SecretAccess {
  get(key: string): Promise<string | undefined>;
  store(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
}

export const tokenKey = (name: string) => `execServer.token.${name}`;

/** Validates one entry; returns the config or a human-readable problem. */
export function parseEnvironment(raw: unknown): EnvironmentConfig | string {
  if (!raw || typeof raw !== 'object') return 'an environment entry must be an object';
  const e = raw as Record<string, unknown>;
  const name = typeof e.name === 'string' ? e.name.trim() : '';
  if (!name) return 'an environment entry needs a non-empty "name"';
  // The name is the authority of exec-server:// URIs: keep it to URI-safe characters.
  if (!/^[A-Za-z0-9._-]+( [A-Za-z0-9._-]+)*$/.test(name) || name.length > 64) {
    return `environment "${name}": the name may only hold letters, digits, ".", "-", "_" and single spaces (64 at most)`;
  }
  if (name.toLowerCase() === LOCAL_ENVIRONMENT.toLowerCase()) return `environment "${name}": the name "Local" is reserved`;
  const hasUrl = e.url !== undefined && e.url !== null && e.url !== '';
  const hasCommand = e.command !== undefined && e.command !== null && e.command !== '';
  if (hasUrl === hasCommand) return `environment "${name}": give exactly one of "url" or "command"`;
  if (hasUrl) {
    if (typeof e.url !== 'string') return `environment "${name}": "url" must be a string`;
    let u: URL;
    try {
      u = new URL(e.url);
    } catch {
      return `environment "${name}": "${e.url}" is not a valid URL`;
    }
    if (u.protocol !== 'ws:' && u.protocol !== 'wss:') return `environment "${name}": the URL must start with ws:// or wss://`;
    return { name, kind: 'websocket', url: e.url };
  }
  if (typeof e.command !== 'string') return `environment "${name}": "command" must be a string`;
  if (e.args !== undefined && (!Array.isArray(e.args) || e.args.some((a) => typeof a !== 'string'))) {
    return `environment "${name}": "args" must be an array of strings`;
  }
  return { name, kind: 'command', command: e.command, args: (e.args as string[] | undefined) ?? [] };
}

/** The valid entries of a raw `execServer.environments` value (first one wins on duplicate names) and the problems of the others. */
export function parseEnvironments(v: unknown): { configs: EnvironmentConfig[]; problems: string[] } {
  const problems: string[] = [];
  const configs: EnvironmentConfig[] = [];
  if (v !== undefined && v !== null && !Array.isArray(v)) problems.push('execServer.environments must be an array');
  for (const raw of Array.isArray(v) ? v : []) {
    const c = parseEnvironment(raw);
    if (typeof c === 'string') problems.push(c);
    else if (configs.some((x) => x.name === c.name)) problems.push(`environment "${c.name}" is defined twice; the first one is used`);
    else configs.push(c);
  }
  return { configs, problems };
}

export class EnvironmentStore {
  constructor(
    private readonly settings: SettingsAccess,
    private readonly secrets: SecretAccess,
  ) {}

  /** `Local` first, then every valid settings entry (first one wins on duplicate names). */
  list(): EnvironmentConfig[] {
    return [{ name: LOCAL_ENVIRONMENT, kind: 'local' }, ...this.load().configs];
  }

  /** Problems in the settings, for the log / a warning. */
  problems(): string[] {
    return this.load().problems;
  }

  get(name: string): EnvironmentConfig | undefined {
    return this.list().find((e) => e.name === name);
  }

  token(name: string): Promise<string | undefined> {
    return this.secrets.get(tokenKey(name));
  }

  /** Adds, or replaces an entry of the same name (its token too). Throws on invalid input. */
  async add(input: AddEnvironmentInput): Promise<EnvironmentConfig> {
    const setting: EnvironmentSetting = { name: typeof input.name === 'string' ? input.name.trim() : input.name };
    if (input.url) setting.url = input.url;
    if (input.command) setting.command = input.command;
    if (input.args && input.args.length) setting.args = input.args;
    const parsed = parseEnvironment(setting);
    if (typeof parsed === 'string') throw new Error(parsed);
    if (input.token !== undefined && input.token !== '' && parsed.kind !== 'websocket') {
      throw new Error(`environment "${parsed.name}": a token only applies to a websocket URL`);
    }
    const raw = this.rawEntries(true).filter((e) => !(e && typeof e === 'object' && (e as EnvironmentSetting).name === parsed.name));
    await this.settings.write([...(raw as EnvironmentSetting[]), setting]);
    if (input.token) await this.secrets.store(tokenKey(parsed.name), input.token);
    else await this.secrets.delete(tokenKey(parsed.name));
    return parsed;
  }

  /** Removes an entry and its token. Returns false if there was none. */
  async remove(name: string): Promise<boolean> {
    if (name === LOCAL_ENVIRONMENT) throw new Error('the Local environment cannot be removed');
    const raw = this.rawEntries(true);
    const kept = raw.filter((e) => !(e && typeof e === 'object' && (e as EnvironmentSetting).name === name));
    await this.secrets.delete(tokenKey(name));
    if (kept.length === raw.length) return false;
    await this.settings.write(kept as EnvironmentSetting[]);
    return true;
  }

  private rawEntries(forWrite = false): unknown[] {
    const v = forWrite && this.settings.readForWrite ? this.settings.readForWrite() : this.settings.read();
    return Array.isArray(v) ? v : [];
  }

  private load(): { configs: EnvironmentConfig[]; problems: string[] } {
    return parseEnvironments(this.settings.read());
  }
}
