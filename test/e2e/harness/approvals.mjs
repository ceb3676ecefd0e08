// The harness side of the approval handshake (see test/e2e/suite/approval.ts): for every
// pending <controlDir>/approval-<id>.request.json, find the workbench question whose text
// contains the requested marker ("Exec Server:") and every `contains` string — a notification
// toast (or the same item in the notification center) or a modal dialog — then click the
// requested button (or, without `answer`, only look), and write approval-<id>.result.json with
// what was clicked and what the question showed: its visible text, the modal's detail, its
// buttons and every <a> link inside it (the security tests check that agent text never becomes
// a link), plus the message's HTML for post-mortems.
import { pendingRequests, writeResult } from './control-channel.mjs';

const firstSeen = new Map();
let lastCenterLook = 0;
const GIVE_UP_MS = 30_000;

const TOASTS = '.notification-toast-container .notification-list-item';
const CENTER = '.notifications-center.visible';
const CENTER_ITEMS = '.notifications-center.visible .notification-list-item';
const DIALOGS = '.monaco-dialog-box';

export async function answerPendingApprovals(page, controlDir, log) {
  for (const { req, resultFile, screenshot, waitedMs } of pendingRequests(controlDir, 'approval-', firstSeen)) {
    const outcome = await tryAnswer(page, req, waitedMs());
    const giveUpMs = typeof req.giveUpMs === 'number' ? req.giveUpMs : GIVE_UP_MS;
    if (outcome.found && (outcome.clicked || !req.answer)) {
      log(`approval: ${req.answer ? `clicked "${req.answer}"${outcome.attempts > 1 ? ` (${outcome.attempts} clicks: the first left it on screen)` : ''}` : req.notice ? 'found the notice' : 'inspected'} on "${String(outcome.text).slice(0, 300)}"`);
      writeResult(resultFile, outcome);
    } else if (waitedMs() > giveUpMs) {
      log(`approval: gave up on ${req.answer ? `"${req.answer}"` : 'inspecting'} (${(req.contains ?? []).join(', ')}): ${outcome.error}${outcome.callLog ? `\n${outcome.callLog}` : ''}`);
      await page.screenshot({ path: screenshot }).catch(() => undefined);
      writeResult(resultFile, { ...outcome, clicked: false, error: `${outcome.error} (after ${giveUpMs / 1000} s)` });
    }
  }
}

/** The anchors inside `scope` that are real links, not the buttons/actions VS Code draws as <a>. */
async function linksIn(scope) {
  return scope.locator('a').evaluateAll((els) => els
    .filter((a) => a.getAttribute('role') !== 'button' && !a.classList.contains('monaco-button') && !a.classList.contains('action-label'))
    .map((a) => ({ text: a.textContent ?? '', href: a.getAttribute('href') ?? '', title: a.getAttribute('title') ?? '', dataHref: a.getAttribute('data-href') ?? '' })));
}

function filtered(locator, page, req) {
  let l = locator.filter({ hasText: req.match ?? 'Exec Server:' });
  for (const c of req.contains ?? []) l = l.filter({ hasText: c });
  // A notice (req.notice): any notification with that text. Otherwise only a question: other
  // "Exec Server:" notifications (notices, progress) have no such button.
  if (req.notice && !req.answer) return l;
  return l.filter({ has: page.getByRole('button', { name: req.answer ?? 'Deny', exact: true }) });
}

/**
 * VS Code shows at most 3 new notifications as toasts within 800 ms (spam protection), hides
 * toasts after a while, and shows none while the notification center is open: such questions
 * wait in the center, which a user opens with the bell in the status bar. Toggles it.
 */
async function toggleNotificationCenter(page) {
  await page.locator('[id="status.notifications"]').first().click({ timeout: 2000 }).catch(() => undefined);
}

/** Clicks `button`; if something lies over it (a hover, the center's sticky header), sends the click to it directly. */
async function clickButton(button) {
  try {
    await button.click({ timeout: 3000 });
  } catch (err) {
    if (!/intercepts pointer events|Timeout/.test(String(err?.message))) throw err;
    await button.dispatchEvent('click');
  }
}

/**
 * Clicks `button` inside the question `scope`, then makes sure the question went away (VS Code
 * closes a notification or dialog on any button click). A click can land on a toast that VS Code
 * is re-rendering, or the dispatched fallback on a detached copy, and do nothing: then the same
 * element (by handle, never a re-query that could match another question) still shows the same
 * text, and its button is clicked again from the page. Reports clicked only when it went away.
 */
async function clickAndConfirm(scope, button, answer, text, textSelector) {
  const handle = await scope.elementHandle({ timeout: 2000 });
  // Gone: detached, hidden, or showing other text; checked in the page every 100 ms (a failed
  // check, e.g. the page navigated, counts as gone, as a failed evaluate did).
  const goneWithin = (ms) => scope.page().waitForFunction(({ el, t, sel }) => {
    if (!el.isConnected || el.getClientRects().length === 0) return true;
    const m = sel ? el.querySelector(sel) : el;
    return !m || m.innerText.trim() !== t;
  }, { el: handle, t: text, sel: textSelector }, { timeout: ms, polling: 100 }).then(() => true, (err) => err?.name !== 'TimeoutError');
  for (let attempt = 1; attempt <= 3; attempt += 1) {
    if (attempt === 1) await clickButton(button);
    else {
      await handle.evaluate((el, a) => {
        const b = [...el.querySelectorAll('a.monaco-button, .monaco-button, [role="button"]')].find((x) => x.textContent?.trim() === a);
        b?.click();
      }, answer).catch(() => undefined);
    }
    if (await goneWithin(2000)) return { clicked: true, attempts: attempt };
  }
  return { clicked: false, attempts: 3, error: `clicked "${answer}" 3 times but the question stayed on screen` };
}

/**
 * The characters of `el` that are on screen: inside its box and every clipping ancestor's and
 * the viewport (innerText also returns what a one-line toast cuts off behind its ellipsis or
 * its edge). Runs in the page.
 */
function onScreen(el) {
  let clip = { l: 0, t: 0, r: window.innerWidth, b: window.innerHeight };
  for (let a = el; a; a = a.parentElement) {
    if (a !== el && getComputedStyle(a).overflow === 'visible') continue;
    const r = a.getBoundingClientRect();
    clip = { l: Math.max(clip.l, r.left), t: Math.max(clip.t, r.top), r: Math.min(clip.r, r.right), b: Math.min(clip.b, r.bottom) };
  }
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  let out = '';
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    for (let i = 0; i < n.data.length; i++) {
      range.setStart(n, i);
      range.setEnd(n, i + 1);
      const r = range.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue; // collapsed whitespace
      if (r.left >= clip.l - 0.5 && r.right <= clip.r + 0.5 && r.top >= clip.t - 0.5 && r.bottom <= clip.b + 0.5) out += n.data[i];
    }
  }
  return out;
}

/** Reads a notification (toast or center item) and clicks `req.answer` on it, if asked to. */
async function answerItem(page, req, item, where) {
  const message = item.locator('.notification-list-item-message').first();
  const text = (await message.innerText({ timeout: 2000 })).trim();
  const buttons = (await item.locator('.notification-list-item-buttons-container').getByRole('button').allInnerTexts())
    .map((b) => b.trim()).filter(Boolean);
  const links = await linksIn(message);
  const html = (await message.innerHTML()).slice(0, 8000);
  const visibleText = await message.evaluate(onScreen).catch(() => undefined);
  const seen = { found: true, kind: 'toast', where, text, visibleText, detail: '', buttons, links, html };
  if (!req.answer) return { ...seen, clicked: false };
  const r = await clickAndConfirm(item, item.getByRole('button', { name: req.answer, exact: true }), req.answer, text, '.notification-list-item-message');
  return { ...seen, ...r, found: r.clicked };
}

async function tryAnswer(page, req, pendingMs) {
  try {
    // The pointer rests where the last click was: a hover opened there (e.g. over a notice that
    // appeared under it) would take the next click. Move it to a neutral corner first.
    await page.mouse.move(2, 2).catch(() => undefined);
    // A modal dialog first (it blocks the toasts); then toasts, then the notification center.
    const dialogs = filtered(page.locator(DIALOGS), page, req);
    if ((await dialogs.count()) > 0) {
      const box = dialogs.first();
      const text = (await box.locator('.dialog-message-text').first().innerText({ timeout: 2000 }).catch(() => '')).trim();
      const detail = (await box.locator('.dialog-message-detail').first().innerText({ timeout: 2000 }).catch(() => '')).trim();
      const buttons = (await box.locator('.dialog-buttons').getByRole('button').allInnerTexts()).map((b) => b.trim()).filter(Boolean);
      const links = await linksIn(box.locator('.dialog-message-row, .dialog-message-container, .dialog-message').first());
      const html = (await box.innerHTML()).slice(0, 8000);
      const seen = { found: true, kind: 'modal', text, detail, buttons, links, html };
      if (!req.answer) return { ...seen, clicked: false };
      const r = await clickAndConfirm(box, box.locator('.dialog-buttons').getByRole('button', { name: req.answer, exact: true }), req.answer, text, '.dialog-message-text');
      return { ...seen, ...r, found: r.clicked };
    }
    const toasts = filtered(page.locator(TOASTS), page, req).filter({ visible: true });
    if ((await toasts.count()) > 0) return await answerItem(page, req, toasts.first(), 'toast');
    // (Not at once: a question just asked is about to show as a toast.) The center is open only
    // while we look: while it is open VS Code shows no toasts, and a list left open went stale.
    // req.toastOnly: the test checks that the question reached the screen, not only the center.
    if (!req.toastOnly && pendingMs > 2000 && Date.now() - lastCenterLook > 1000) {
      lastCenterLook = Date.now();
      if ((await page.locator(CENTER).count()) === 0) {
        await toggleNotificationCenter(page);
        // Opened and its rows drawn (an empty center draws none: the bound, not an error).
        await page.locator(CENTER_ITEMS).first().waitFor({ state: 'visible', timeout: 1000 }).catch(() => undefined);
      }
      try {
        const items = filtered(page.locator(CENTER_ITEMS), page, req);
        if ((await items.count()) > 0) return await answerItem(page, req, items.first(), 'center');
      } finally {
        if ((await page.locator(CENTER).count()) > 0) await toggleNotificationCenter(page);
      }
    }
    return { found: false, clicked: false, error: `no question containing "${[req.match ?? 'Exec Server:', ...(req.contains ?? [])].join('", "')}"${req.answer ? ` with a "${req.answer}" button` : ''}` };
  } catch (err) {
    const lines = String(err?.message ?? err).split('\n');
    return { found: false, clicked: false, error: lines[0], callLog: lines.slice(1, 12).join('\n') };
  }
}
