// Registers the handler of one command of the table (./command-ids.ts) with the error
// handling every command shares, runs table commands with typed arguments, and reads the
// unchecked argument object commands receive.
import * as vscode from 'vscode';
import type { CommandArgs, CommandId, CommandResult } from './command-ids';
import { wasReported } from '../reported';
import { noLinks } from '../notification-text';

/** The argument object as received: an object, or undefined (no args, a URI, a primitive). */
export type Args = Record<string, unknown> | undefined;

export type CommandHandler<K extends CommandId> = (args: Args, raw: unknown) => CommandResult<K> | Promise<CommandResult<K>>;

/**
 * Invoked by the user (palette, menu, view, walkthrough link) rather than by code: no args,
 * a tree node, or a URI (an Explorer context menu). Such calls report their errors once
 * themselves and resolve with undefined; VS Code would otherwise add its own "Error running
 * command" toast to ours.
 */
function interactive(raw: unknown): boolean {
  return raw === undefined || raw === null || raw instanceof vscode.Uri || (typeof raw === 'object' && typeof (raw as { type?: unknown }).type === 'string');
}

function asArgs(a: unknown): Args {
  return a && typeof a === 'object' && !(a instanceof vscode.Uri) ? (a as Record<string, unknown>) : undefined;
}

/** Registers `id` (which must be in COMMANDS and package.json) for the extension's lifetime. */
export function registerCommand<K extends CommandId>(ctx: vscode.ExtensionContext, log: vscode.LogOutputChannel, id: K, handler: CommandHandler<K>): void {
  ctx.subscriptions.push(
    vscode.commands.registerCommand(id, async (raw: unknown) => {
      try {
        return await handler(asArgs(raw), raw);
      } catch (e) {
        if (!interactive(raw)) throw e; // programmatic callers handle their own failures
        const msg = e instanceof Error ? e.message : String(e);
        log.error(`${id}: ${msg}`);
        // noLinks: an error may quote a host, a file name or a tool's stderr, and notifications make [x](command:…) a link.
        if (!wasReported(e)) void vscode.window.showErrorMessage(noLinks(msg.startsWith('Exec Server:') ? msg : `Exec Server: ${msg}`));
        return undefined;
      }
    }),
  );
}

/** vscode.commands.executeCommand for a table command, with its argument and result types. */
export function executeCommand<K extends CommandId>(id: K, args?: CommandArgs<K>): Thenable<CommandResult<K>> {
  return vscode.commands.executeCommand<CommandResult<K>>(id, args);
}

/** A non-empty string argument. */
export function str(a: Args, key: string): string | undefined {
  const v = a?.[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** An array-of-strings argument; anything else than undefined or such an array is an error. */
export function strArray(a: Args, key: string): string[] | undefined {
  const v = a?.[key];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new Error(`"${key}" must be an array of strings`);
  return v as string[];
}
