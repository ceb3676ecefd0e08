// environment/*, environmentConfig/read and http/request method table.
import { Messages, invalidParams } from '../../protocol/errors';
import { environmentConfig, environmentInfo } from '../environment';
import { httpRequest, pinnedOf } from '../http';
import { decodeHeaders, resolveHeaders } from '../http-headers';
import * as P from '../params';
import { spec, type DiscoveryMethod, type FsMethod, type MethodTable, type ProcessMethod, type ServerMethod } from './spec';

export const otherMethods: MethodTable<Exclude<ServerMethod, ProcessMethod | FsMethod | DiscoveryMethod>> = {
  'environment/info': spec(
    'environment info',
    (raw) => P.object(raw, 'EnvironmentInfoParams', true),
    () => environmentInfo(),
  ),
  'environment/status': spec(
    'environment status',
    (raw) => P.object(raw, 'EnvironmentStatusParams', true),
    () => ({ status: 'ready' }),
  ),
  'environmentConfig/read': spec(
    'environment config',
    (raw) => {
      const o = P.object(raw, 'WireEnvironmentConfigReadParams');
      P.str(o, 'cwd');
      const lists = ['configPaths', 'requirementsPaths'].map((k) => {
        const v = o[k];
        if (v === undefined) throw invalidParams(Messages.missingField(k));
        if (!Array.isArray(v)) throw invalidParams(`invalid type: ${v === null ? 'null' : typeof v}, expected a sequence`);
        return v;
      });
      if (lists[0].length + lists[1].length === 0) throw invalidParams('at least one config or requirements path is required');
      return o;
    },
    () => environmentConfig(),
  ),
  'http/request': spec(
    'http',
    (raw) => {
      const o = P.object(raw, 'WireHttpRequestParams');
      const method = P.str(o, 'method');
      const url = P.str(o, 'url');
      if (o.headers === undefined) throw invalidParams(Messages.missingField('headers'));
      const headers = decodeHeaders(o.headers);
      const bodyB64 = P.optStr(o, 'bodyBase64');
      let body: Buffer | undefined;
      if (bodyB64 !== undefined) {
        try {
          body = P.base64(bodyB64, 'http/request requires valid base64 bodyBase64');
        } catch (e) {
          throw invalidParams((e as Error).message);
        }
      }
      return {
        method,
        url,
        headers,
        body,
        timeoutMs: P.optUint(o, 'timeoutMs'),
        redirectPolicy: P.optVariant(o, 'redirectPolicy', ['follow', 'stop'] as const) ?? 'follow',
        requestId: P.str(o, 'requestId'),
        streamResponse: P.optBool(o, 'streamResponse') ?? false,
        // In process only (never from the wire): the addresses the agent gate judged.
        pinned: pinnedOf(raw),
      };
    },
    // valueEnvVar is read from this process's environment when the request runs.
    (c, p) => c.http({ ...p, headers: resolveHeaders(p.headers, process.env) }, httpRequest),
  ),
};

