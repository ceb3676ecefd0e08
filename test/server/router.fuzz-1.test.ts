// Router fuzzing, shard 1 of 2 (the odd batches): see ./router-fuzz.ts.
import { test } from 'node:test';
import { routerFuzz, SEED } from './router-fuzz';

test(`router fuzz shard 1/2: the odd batches of 100 000 generated/mutated frames at requestUntyped/notification (seed ${SEED})`, () => routerFuzz(1, 2));
