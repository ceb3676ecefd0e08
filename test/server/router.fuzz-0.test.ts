// Router fuzzing, shard 0 of 2 (the even batches): see ./router-fuzz.ts.
import { test } from 'node:test';
import { routerFuzz, SEED } from './router-fuzz';

test(`router fuzz shard 0/2: the even batches of 100 000 generated/mutated frames at requestUntyped/notification (seed ${SEED})`, () => routerFuzz(0, 2));
