// The harness side of the approval handshake (see test/e2e/suite/approval.ts): for every
// pending <controlDir>/approval-<id>.request.json, find the workbench notification whose text
// contains the requested marker ("Exec Server:"), click the requested button, and write
// approval-<id>.result.json with what was clicked, the notification text and its buttons.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const firstSeen = new Map();
const GIVE_UP_MS = 30_000;

export async function answerPendingApprovals(page, controlDir, log) {
  let names;
  try {
    names = readdirSync(controlDir).filter((n) => n.endsWith('.request.json'));
  } catch {
    return;
  }
  for (const name of names) {
    const resultFile = path.join(controlDir, name.replace('.request.json', '.result.json'));
    if (existsSync(resultFile)) continue;
    let req;
    try {
      req = JSON.parse(readFileSync(path.join(controlDir, name), 'utf8'));
    } catch {
      continue; // being written
    }
    if (!firstSeen.has(name)) firstSeen.set(name, Date.now());
    const outcome = await tryClick(page, req);
    if (outcome.clicked) {
      log(`approval: clicked "${req.answer}" on "${outcome.text}"`);
      writeFileSync(resultFile, JSON.stringify(outcome));
    } else if (Date.now() - firstSeen.get(name) > GIVE_UP_MS) {
      log(`approval: gave up on "${req.answer}": ${outcome.error}`);
      writeFileSync(resultFile, JSON.stringify({ clicked: false, error: `${outcome.error} (after ${GIVE_UP_MS / 1000} s)` }));
    }
  }
}

async function tryClick(page, req) {
  try {
    // Toasts first; the notification center holds the same items if a toast was hidden.
    const toasts = page.locator('.notification-toast-container .notification-list-item, .notifications-center .notification-list-item')
      .filter({ hasText: req.match })
      // Only the question: other "Exec Server:" notifications (info, warnings) have no such button.
      .filter({ has: page.getByRole('button', { name: req.answer, exact: true }) });
    const n = await toasts.count();
    if (n === 0) return { clicked: false, error: `no notification containing "${req.match}"` };
    const item = toasts.first();
    const text = (await item.locator('.notification-list-item-message').first().innerText({ timeout: 2000 })).trim();
    const buttons = (await item.locator('.notification-list-item-buttons-container').getByRole('button').allInnerTexts())
      .map((b) => b.trim()).filter(Boolean);
    await item.getByRole('button', { name: req.answer, exact: true }).click({ timeout: 3000 });
    return { clicked: true, text, buttons };
  } catch (err) {
    return { clicked: false, error: String(err?.message ?? err).split('\n')[0] };
  }
}
