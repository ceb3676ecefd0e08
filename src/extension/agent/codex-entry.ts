// The Codex `environments.toml` entries of running agent endpoints: one `[[environments]]`
// table per endpoint (Codex holds several and picks one per thread). Codex reads the token only
// from here (auth_bearer_token), so the entries hold it.

export interface EndpointEntry {
  /** The environment the endpoint serves (Local or a remote one). */
  environment: string;
  url: string;
  token: string;
}

/** The id Codex knows the endpoint by: `vscode` for Local, `vscode-<name>` for an environment. */
export function codexEnvironmentId(environment: string, local: string): string {
  if (environment === local) return 'vscode';
  const slug = environment.toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '');
  return `vscode-${slug || 'environment'}`;
}

const tomlString = (s: string) => JSON.stringify(s); // TOML basic strings accept JSON's escapes

/** One entry. */
export function codexEnvironmentEntry(url: string, token: string, id = 'vscode'): string {
  return `[[environments]]\nid = ${tomlString(id)}\nurl = ${tomlString(url)}\nauth_bearer_token = ${tomlString(token)}\n`;
}

/** Every endpoint's entry, ids made unique (two names may give the same slug). */
export function codexEnvironmentEntries(endpoints: readonly EndpointEntry[], local: string): string {
  const used = new Set<string>();
  return endpoints
    .map((e) => {
      const base = codexEnvironmentId(e.environment, local);
      let id = base;
      for (let n = 2; used.has(id); n++) id = `${base}-${n}`;
      used.add(id);
      return `# ${e.environment.replace(/[\r\n]/g, ' ')}\n${codexEnvironmentEntry(e.url, e.token, id)}`;
    })
    .join('\n');
}
