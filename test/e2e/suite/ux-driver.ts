// The suite's side of the UI channel (harness: test/e2e/harness/ui.mjs). The quick input and
// the workbench DOM are out of the extension host's reach, so each step is a request file the
// harness carries out with Playwright — typing, Enter, Escape, the Back button, clicks — and
// answers with what the quick input shows. Protocol:
//   <controlDir>/ui-<n>.request.json  {op?: 'quickInput'|'text'|'click'|'screenshot', name?, waitTitle?, waitItem?, waitHidden?, fill?, press?, clickBack?, selector?, contains?, giveUpMs?}
//   <controlDir>/ui-<n>.result.json   {ok, error?, before?, state?, texts?}
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { config } from './config';
import { waitFor } from './util';

export interface QuickInputState {
  visible: boolean;
  title: string;
  value?: string;
  placeholder?: string;
  inputType?: string;
  /** The prompt, or the validation message while the value is invalid. */
  message?: string;
  inputBoxClass?: string;
  back?: boolean;
  busy?: boolean;
  /** aria-labels of the list rows (label, description). */
  items: string[];
}

export interface UiRequest {
  op?: 'quickInput' | 'text' | 'count' | 'click' | 'screenshot' | 'pages' | 'closeOthers' | 'keys';
  /** 'other': the newest browser page other than the harness's own (a window the test opened). */
  page?: 'other';
  /** op screenshot: saved as test-results/ux-<name>.png. */
  name?: string;
  /** Wait until the open quick input's title contains this. */
  waitTitle?: string;
  /** Wait until one of its items contains this. */
  waitItem?: string;
  /** Wait until no quick input is open. */
  waitHidden?: boolean;
  waitBusy?: false;
  fill?: string;
  /** Click the item whose label contains this (after fill, before press). */
  pick?: string;
  press?: string | string[];
  clickBack?: boolean;
  selector?: string;
  contains?: string;
  giveUpMs?: number;
  settleMs?: number;
  /** op click: the click's effect, an element whose text comes to contain `contains`; the click is repeated (up to 3 times) until it does. */
  until?: { selector: string; contains: string };
}

interface UiResult {
  ok: boolean;
  error?: string;
  before?: QuickInputState;
  state?: QuickInputState;
  texts?: string[];
  count?: number;
}

let next = 0;

async function send(req: UiRequest): Promise<UiResult> {
  const { controlDir, approvalDriver } = config();
  if (!approvalDriver) throw new Error('no harness drives the workbench UI here (run through test/e2e/run.mjs)');
  const id = `${process.pid}-${++next}`;
  const result = path.join(controlDir, `ui-${id}.result.json`);
  writeFileSync(path.join(controlDir, `ui-${id}.request.json`), JSON.stringify(req));
  // Parsed inside the probe: a result file caught half-written is read again on the next poll.
  return waitFor(`harness answer to ui request ${id}`, () => existsSync(result) && (JSON.parse(readFileSync(result, 'utf8')) as UiResult), (req.giveUpMs ?? 20_000) + 15_000, 150);
}

/** Carries out `req` on the open quick input; resolves with what it shows afterwards (and before, in `before`). */
export async function quickInput(req: UiRequest): Promise<QuickInputState & { before: QuickInputState }> {
  const r = await send({ op: 'quickInput', ...req });
  if (!r.ok) throw new Error(`quick input: ${r.error} (it shows ${JSON.stringify(r.state)})`);
  return { ...(r.state as QuickInputState), before: r.before as QuickInputState };
}

/** Visible texts of the elements matching `selector`; with `contains`, waits until one holds it. */
export async function uiTexts(selector: string, contains?: string, giveUpMs?: number): Promise<string[]> {
  const r = await send({ op: 'text', selector, contains, giveUpMs });
  if (!r.ok) throw new Error(`ui text: ${r.error}`);
  return r.texts ?? [];
}

/** How many elements of the workbench match `selector` (icons and other text-less elements too). */
export async function uiCount(selector: string): Promise<number> {
  const r = await send({ op: 'count', selector });
  if (!r.ok) throw new Error(`ui count: ${r.error}`);
  return r.count ?? 0;
}

/**
 * Clicks the first element matching `selector` (hovering first: inline tree actions). With
 * `until`, for actions safe to repeat: clicked again until `until.selector` shows `until.contains`.
 */
export async function uiClick(selector: string, until?: { selector: string; contains: string }): Promise<void> {
  const r = await send({ op: 'click', selector, until });
  if (!r.ok) throw new Error(`ui click: ${r.error}`);
}

/** URLs of every open workbench page (window); with `contains`, waits until one holds it. */
export async function uiPages(contains?: string, giveUpMs?: number): Promise<string[]> {
  const r = await send({ op: 'pages', contains, giveUpMs });
  if (!r.ok) throw new Error(`ui pages: ${r.error}`);
  return r.texts ?? [];
}

/** Closes every page (window) but the harness's own. */
export async function uiCloseOtherWindows(): Promise<void> {
  const r = await send({ op: 'closeOthers' });
  if (!r.ok) throw new Error(`ui closeOthers: ${r.error}`);
}

/** A request carried out on the newest other window (page) instead of the harness's. */
export async function uiOnOtherWindow(req: UiRequest): Promise<{ ok: boolean; error?: string; state?: QuickInputState; texts?: string[] }> {
  return send({ ...req, page: 'other' });
}

/** Presses keys on the harness's window, wherever its focus is (a terminal, the editor); one character or key name each. */
export async function uiKeys(press: string[], settleMs?: number): Promise<void> {
  const r = await send({ op: 'keys', press, settleMs });
  if (!r.ok) throw new Error(`ui keys: ${r.error}`);
}

/** Saves the workbench as it looks now to test-results/ux-<name>.png (pictures for the README). */
export async function uiScreenshot(name: string): Promise<void> {
  const r = await send({ op: 'screenshot', name });
  if (!r.ok) throw new Error(`ui screenshot: ${r.error}`);
}
