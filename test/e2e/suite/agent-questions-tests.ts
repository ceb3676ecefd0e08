// A burst of agent questions in the real workbench. VS Code turns at most 3 notifications per
// 800 ms into toasts; the rest only land in the notification center, where nobody sees them
// and they time out as "denied" (an agent pipelining five requests got two silent refusals).
// The extension paces its questions (src/extension/approval/question-pacer.ts) and shows how many
// are open in the status bar; every question must reach the screen as a toast.
import { pathToFileURL } from 'node:url';
import { AgentClient } from './agent-client';
import { agentEndpoint } from './agent-security-tests';
import { answerApprovalIfShown, setApprovalPolicyForTest } from './approval';
import { test } from './framework';
import { uiTexts } from './ux-driver';
import { assert, freshDir, uniqueName, waitFor } from './util';

const STATUS = '[id$="execServer.questions"]';

export function registerAgentQuestionsTests(): void {
  test('agent questions: a burst of five pipelined requests — each question shows as a toast (none only in the notification center), and the status bar counts the open ones', async () => {
    await setApprovalPolicyForTest('alwaysAsk');
    const dir = freshDir('questions');
    const { url, token } = await agentEndpoint();
    const c = await AgentClient.connect(url, token);
    try {
      const burst = uniqueName('burst');
      const marks = [1, 2, 3, 4, 5].map((i) => `${burst}-q${i}`);
      const starts = marks.map((m) =>
        c.settle('process/start', {
          processId: m,
          argv: ['/bin/sh', '-c', `echo ${m}`],
          cwd: pathToFileURL(dir).href,
          env: { PATH: '/usr/bin:/bin' },
          tty: false,
          pipeStdin: false,
          arg0: null,
        }),
      );
      const counted = await waitFor('the status bar to count five open questions', async () => {
        const t = await uiTexts(STATUS, 'agent question', 2000).catch(() => [] as string[]);
        return t.find((x) => /\b5 agent questions\b/.test(x));
      }, 20_000, 250);
      // Whichever question is on screen is answered (the gate decides pipelined requests in any order).
      const seen: string[] = [];
      const denied = new Set<string>();
      for (let i = 0; i < marks.length; i++) {
        const r = await answerApprovalIfShown('Deny', { contains: burst, giveUpMs: 15_000, toastOnly: true });
        const which = marks.find((m) => r.text?.includes(`echo ${m}`));
        if (r.clicked && r.kind === 'toast' && which) denied.add(which);
        seen.push(r.clicked ? `${which ?? '?'} denied on a ${r.kind}` : `none on screen (${r.error})`);
      }
      const results = await Promise.all(starts);
      assert(denied.size === marks.length, `every question was a toast and was answered there:\n  ${seen.join('\n  ')}`);
      assert(results.every((r) => !r.ok), 'every denied start failed');
      assert(/5 agent questions/.test(counted), `status bar: "${counted}"`);
      await waitFor('the questions item to leave the status bar', async () => !(await uiTexts(STATUS)).some((t) => /agent question/.test(t)), 10_000, 250);
    } finally {
      c.terminate();
    }
  }, 150_000);
}
