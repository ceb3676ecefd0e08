// http/request request headers: `{name, value, valueEnvVar?}` as the reference takes them
// (capability httpHeaderEnvVars). `valueEnvVar` names a variable of the EXECUTOR's environment
// whose value is appended to `value` (Codex sends MCP `bearer_token_env_var` this way); the
// request is refused, and nothing sent, when it is unset or empty. Names and values are checked
// here with the reference's texts (fetch would refuse them with its own, as -32603).
import { invalidParams } from '../protocol/errors';
import type { HttpHeader } from '../protocol/types';
import * as P from './params';

/** RFC 9110 token: what the http crate accepts as a header name. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A header value the http crate parses: visible ASCII, space, tab and obs-text (0x80–0xff); no other control byte. */
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;

export function decodeHeaders(hv: unknown): HttpHeader[] {
  if (!Array.isArray(hv)) throw invalidParams('invalid type: map, expected a sequence');
  return hv.map((h) => {
    const ho = P.object(h, 'HttpHeader');
    const name = P.str(ho, 'name');
    const value = P.str(ho, 'value');
    const valueEnvVar = P.optStr(ho, 'valueEnvVar');
    return valueEnvVar === undefined ? { name, value } : { name, value, valueEnvVar };
  });
}

/**
 * The headers as sent: each checked in order (name, then its variable, then the value), the
 * variable's value appended; `valueEnvVar` is dropped. Throws -32602 with the reference's text.
 */
export function resolveHeaders(headers: readonly HttpHeader[], env: NodeJS.ProcessEnv): HttpHeader[] {
  return headers.map((h) => {
    if (!TOKEN.test(h.name)) throw invalidParams('http/request header name is invalid: invalid HTTP header name');
    let value = h.value;
    if (h.valueEnvVar !== undefined) {
      const v = h.valueEnvVar === '' ? undefined : env[h.valueEnvVar];
      if (v === undefined) throw invalidParams(`http/request header ${h.name} requires executor environment variable ${h.valueEnvVar}`);
      if (v === '') throw invalidParams(`http/request header ${h.name} requires a non-empty executor environment variable ${h.valueEnvVar}`);
      value += v;
    }
    if (BAD_VALUE.test(value)) throw invalidParams(`http/request header value is invalid for ${h.name}: failed to parse header value`);
    return { name: h.name, value };
  });
}
