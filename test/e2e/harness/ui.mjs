// The harness side of the UI channel (see test/e2e/suite/ux-driver.ts): the suite cannot type
// into VS Code's quick input or read the workbench DOM, so it writes
// <controlDir>/ui-<id>.request.json and this file does it with Playwright, like a user with a
// keyboard: wait for the quick input (optionally with a title containing `waitTitle`, or for it
// to be hidden), fill its text box, press keys, click its Back button, then report what the
// quick input shows (title with "n/m", prompt or validation message, items, buttons) in
// ui-<id>.result.json. `op: 'text'` reports the visible text of a selector instead (tree rows,
// the status bar). A request not satisfied within giveUpMs reports {ok: false, error}.
// Other windows (a test's "Open in New Window" opens a browser page): `op: 'pages'` lists the
// URLs of every page (with `contains`: until one has it), `op: 'closeOthers'` closes all but the
// harness page, and `page: 'other'` runs any request on the newest other page; `op: 'keys'`
// presses keys there without a quick input (F1 opens the command palette).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pendingRequests, writeResult } from './control-channel.mjs';

/** `op: 'screenshot'` saves test-results/ux-<name>.png (README pictures of the flows are picked from there). */
const shotsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../../test-results');

const firstSeen = new Map();
const GIVE_UP_MS = 20_000;
const WIDGET = '.quick-input-widget';

export async function answerUiRequests(page, controlDir, log) {
  for (const { req, resultFile, screenshot, waitedMs } of pendingRequests(controlDir, 'ui-', firstSeen)) {
    const waited = waitedMs();
    let outcome;
    try {
      outcome = await handle(page, req);
    } catch (err) {
      outcome = { ok: false, error: String(err?.message ?? err).split('\n')[0] };
    }
    if (outcome.ok) {
      log(`ui: ${describe(req)} → ${JSON.stringify(outcome.state ?? outcome.texts ?? '').slice(0, 300)}`);
      writeResult(resultFile, outcome);
    } else if (outcome.final || waited > (req.giveUpMs ?? GIVE_UP_MS)) {
      // final: the request already tried for as long as it may (a click repeated until its effect).
      // The state of the window the request was for (the newest other one for page: 'other').
      const others = page.context().pages().filter((p) => p !== page);
      const state = await quickInputState(req.page === 'other' ? (others[others.length - 1] ?? page) : page).catch(() => undefined);
      log(`ui: gave up on ${describe(req)}: ${outcome.error}`);
      await page.screenshot({ path: screenshot }).catch(() => undefined);
      writeResult(resultFile, { ...outcome, state });
    }
  }
}

/** Inline tree actions show only on hover: move there, then click (directly if still hidden). */
async function clickOnce(target) {
  await target.hover({ timeout: 2000 }).catch(() => undefined);
  try {
    await target.click({ timeout: 2000 });
  } catch {
    await target.dispatchEvent('click');
  }
}

const UNTIL_MS = 4000;
const UNTIL_ATTEMPTS = 3;

/**
 * A click whose effect is known (`until`: an element's text to contain `contains`), for actions
 * that are safe to repeat (start, stop). A tree re-rendered between the hover and the click
 * (every process or connection change redraws the Environments view) takes the click on a row
 * that is gone, and nothing happens: then the action is clicked again from a fresh query, up to
 * three times. Fails naming what was shown, with the notifications' texts (an error the action
 * raised is one of them).
 */
async function clickUntil(page, req) {
  const shown = async () => (await page.locator(req.until.selector).allInnerTexts().catch(() => [])).map((t) => t.trim());
  for (let attempt = 1; attempt <= UNTIL_ATTEMPTS; attempt += 1) {
    const target = page.locator(req.selector).first();
    if ((await target.count()) === 0) break;
    await clickOnce(target);
    const effect = page.locator(req.until.selector).filter({ hasText: req.until.contains }).first();
    if (await effect.waitFor({ timeout: UNTIL_MS }).then(() => true, () => false)) return { ok: true, attempts: attempt };
  }
  const notes = await page.locator('.notification-list-item-message').allInnerTexts().catch(() => []);
  return {
    ok: false,
    final: true,
    error: `clicked ${req.selector}; "${req.until.selector}" never contained "${req.until.contains}" (saw ${JSON.stringify(await shown()).slice(0, 300)}; notifications ${JSON.stringify(notes).slice(0, 400)})`,
  };
}

function describe(req) {
  return [req.op ?? 'quickInput', req.waitTitle && `title~"${req.waitTitle}"`, req.waitHidden && 'hidden', req.fill !== undefined && `fill "${req.fill}"`,
    req.press && `press ${[].concat(req.press).join(',')}`, req.clickBack && 'Back', req.selector].filter(Boolean).join(' ');
}

async function handle(main, req) {
  if (req.op === 'pages') {
    const urls = main.context().pages().map((p) => p.url());
    if (req.contains && !urls.some((u) => u.includes(req.contains))) return { ok: false, error: `no page URL containing "${req.contains}" (${JSON.stringify(urls)})` };
    return { ok: true, texts: urls };
  }
  if (req.op === 'closeOthers') {
    for (const p of main.context().pages()) if (p !== main) await p.close().catch(() => undefined);
    return { ok: true };
  }
  let page = main;
  if (req.page === 'other') {
    const others = main.context().pages().filter((p) => p !== main);
    page = others[others.length - 1];
    if (!page) return { ok: false, error: 'no other window (page) is open' };
    await page.bringToFront().catch(() => undefined);
  }
  if (req.op === 'keys') {
    for (const key of [].concat(req.press ?? [])) {
      await page.keyboard.press(key);
      await page.waitForTimeout(150); // why: keys one after another, as a user types (a key has no event for its effect)
    }
    // why: the workbench has no "done reacting to these keys" event; callers wait for the state they need next
    await page.waitForTimeout(req.settleMs ?? 400);
    return { ok: true };
  }
  if (req.op === 'count') {
    // How many elements match (e.g. codicon spans, which have no text for op 'text').
    return { ok: true, count: await page.locator(req.selector).count() };
  }
  if (req.op === 'text') {
    const loc = page.locator(req.selector);
    const texts = (await loc.allInnerTexts()).map((t) => t.trim()).filter(Boolean);
    if (req.contains && !texts.some((t) => t.includes(req.contains))) return { ok: false, error: `no "${req.selector}" containing "${req.contains}" (saw ${JSON.stringify(texts).slice(0, 400)})` };
    return { ok: true, texts };
  }
  if (req.op === 'screenshot') {
    if (!/^[a-z0-9-]+$/.test(String(req.name))) return { ok: false, error: `bad screenshot name ${req.name}` };
    mkdirSync(shotsDir, { recursive: true });
    await page.mouse.move(2, 2).catch(() => undefined);
    await page.screenshot({ path: path.join(shotsDir, `ux-${req.name}.png`) });
    return { ok: true };
  }
  if (req.op === 'click') {
    const target = page.locator(req.selector).first();
    if ((await target.count()) === 0) return { ok: false, error: `nothing matches ${req.selector}` };
    if (!req.until) {
      await clickOnce(target);
      await page.waitForTimeout(req.settleMs ?? 300); // why: no "done reacting to the click" event; callers wait for the state they need next
      return { ok: true };
    }
    return clickUntil(page, req);
  }
  const widget = page.locator(WIDGET);
  const visible = await widget.isVisible().catch(() => false);
  if (req.waitHidden) {
    if (visible) return { ok: false, error: 'the quick input is still open' };
    return { ok: true, state: await quickInputState(page) };
  }
  if (!visible) return { ok: false, error: 'no quick input is open' };
  const before = await quickInputState(page);
  if (req.waitTitle && !before.title.includes(req.waitTitle)) return { ok: false, error: `quick input title is "${before.title}", not containing "${req.waitTitle}"` };
  if (req.waitItem && !before.items.some((i) => i.includes(req.waitItem))) return { ok: false, error: `no item containing "${req.waitItem}" (items: ${JSON.stringify(before.items).slice(0, 300)})` };
  if (req.waitBusy === false && before.busy) return { ok: false, error: 'the quick input is busy' };
  const input = widget.locator('.quick-input-box input').first();
  if (req.fill !== undefined) await input.fill(req.fill, { timeout: 3000 });
  if (req.clickBack) await widget.locator('.quick-input-titlebar [aria-label^="Back"], .quick-input-titlebar .codicon-quick-input-back').first().click({ timeout: 3000 });
  if (req.pick) {
    // Click the row whose label holds `pick` (Enter takes the first row, which may be another match).
    const labels = await rows(widget).evaluateAll((els) => els.map((e) => (e.getAttribute('aria-label') || e.textContent || '').trim()));
    const i = labels.findIndex((l) => l.includes(req.pick));
    if (i < 0) return { ok: false, error: `no item containing "${req.pick}" to pick (items: ${JSON.stringify(labels).slice(0, 300)})` };
    await rows(widget).nth(i).click({ timeout: 3000 });
  }
  for (const key of [].concat(req.press ?? [])) {
    await input.focus().catch(() => undefined);
    await page.keyboard.press(key);
    await page.waitForTimeout(150); // why: keys one after another, as a user types
  }
  // why: the returned state is what the quick input shows once it reacted; it has no event for that (settleMs: a slower filter)
  await page.waitForTimeout(req.settleMs ?? 400);
  return { ok: true, before, state: await quickInputState(page) };
}

function rows(widget) {
  return widget.locator('.quick-input-list .monaco-list-row');
}

/** What the quick input shows now (visible: false when it is closed). */
async function quickInputState(page) {
  const widget = page.locator(WIDGET);
  if (!(await widget.isVisible().catch(() => false))) return { visible: false, title: '', items: [] };
  const text = async (sel) => (await widget.locator(sel).first().innerText({ timeout: 1000 }).catch(() => '')).trim();
  const input = widget.locator('.quick-input-box input').first();
  const rows = widget.locator('.quick-input-list .monaco-list-row');
  const items = (await rows.evaluateAll((els) => els.map((e) => (e.getAttribute('aria-label') || e.textContent || '').trim()))).filter(Boolean);
  return {
    visible: true,
    title: await text('.quick-input-title'),
    value: await input.inputValue({ timeout: 1000 }).catch(() => ''),
    placeholder: (await input.getAttribute('placeholder', { timeout: 1000 }).catch(() => '')) ?? '',
    inputType: (await input.getAttribute('type', { timeout: 1000 }).catch(() => '')) ?? '',
    message: await text('.quick-input-message'),
    // VS Code marks a validation error on the input box ("error" / "warning" / "info" class).
    inputBoxClass: (await widget.locator('.quick-input-box .monaco-inputbox').first().getAttribute('class', { timeout: 1000 }).catch(() => '')) ?? '',
    back: (await widget.locator('.quick-input-titlebar [aria-label^="Back"], .quick-input-titlebar .codicon-quick-input-back').count()) > 0,
    // The progress bar is always in the DOM; it runs (class "active") while `busy` is set.
    busy: (await widget.locator('.monaco-progress-container.active').count().catch(() => 0)) > 0,
    items,
  };
}
