test('other passes', () => {
  expect(1).toBe(1);
});
