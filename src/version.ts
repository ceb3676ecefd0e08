// Injected by esbuild (esbuild.mjs `define`); falls back for tsc-compiled test builds.
declare const __EXEC_SERVER_VERSION__: string | undefined;
export const VERSION: string =
  typeof __EXEC_SERVER_VERSION__ === 'string' ? __EXEC_SERVER_VERSION__ : (process.env.EXEC_SERVER_VERSION ?? '0.0.0-dev');
