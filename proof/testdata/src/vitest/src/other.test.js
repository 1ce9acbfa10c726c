import { test, expect } from 'vitest';
test('other passes', () => {
  expect(1).toBe(1);
});
