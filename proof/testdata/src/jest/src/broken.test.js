const { subtract } = require('./missing');
test('subtract', () => {
  expect(subtract(3, 1)).toBe(2);
});
