#[test]
fn integrates() {
    assert_eq!(calc::add(1, 1), 2);
}
