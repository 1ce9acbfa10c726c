import { test, expect } from 'vitest';
import { subtract } from './missing';
test('subtract', () => {
  expect(subtract(3, 1)).toBe(2);
});
