// src/server/paths.ts isInside: the one containment check of the sandbox profiles, the agent gate and the approvals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isInside } from '../../src/server/paths';
import { isInside as gateIsInside } from '../../src/extension/agent/paths';
import { isInside as approvalIsInside } from '../../src/extension/approval/policy';

test('isInside: the same path and paths below it; never a sibling that shares the prefix', () => {
  const yes: [string, string][] = [['/a', '/a'], ['/a/b', '/a'], ['/a/b/c', '/a/'], ['/a/b/../c', '/a'], ['/x', '/'], ['/', '/'], ['/a//b', '/a']];
  const no: [string, string][] = [['/ab', '/a'], ['/a', '/a/b'], ['/a/..', '/a'], ['/a/../b', '/a'], ['/', '/a']];
  for (const [p, r] of yes) assert.equal(isInside(p, r), true, `${p} inside ${r}`);
  for (const [p, r] of no) assert.equal(isInside(p, r), false, `${p} not inside ${r}`);
});

test('isInside: the gate and the approvals use the same function', () => {
  assert.equal(gateIsInside, isInside);
  assert.equal(approvalIsInside, isInside);
});
