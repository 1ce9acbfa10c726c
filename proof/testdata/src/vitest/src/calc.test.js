import { describe, test, it, expect } from 'vitest';
import { add } from './calc';

describe('add', () => {
  test('adds', () => {
    expect(add(2, 2)).toBe(4);
  });
  test('is wrong', () => {
    expect(add(2, 2)).toBe(5);
  });
  describe('nested group', () => {
    it('works deep', () => {
      expect(add(0, 0)).toBe(0);
    });
    it.skip('skipped deep', () => {});
    test.todo('to do');
  });
  test.each([[1, 1, 2], [2, 2, 5]])('add(%i, %i) = %i', (a, b, want) => {
    expect(add(a, b)).toBe(want);
  });
});

test('top level throws', () => {
  throw new Error('top level boom\nsecond line');
});
