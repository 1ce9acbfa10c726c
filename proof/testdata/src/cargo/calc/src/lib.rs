/// Adds two numbers.
///
/// ```
/// assert_eq!(calc::add(2, 2), 4);
/// ```
///
/// ```
/// assert_eq!(calc::add(2, 2), 5);
/// ```
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(2, 2), 4);
    }

    #[test]
    fn is_wrong() {
        assert_eq!(add(2, 2), 5, "two and two");
    }

    #[test]
    #[ignore = "slow"]
    fn ignored() {}

    #[test]
    #[should_panic(expected = "boom")]
    fn panics_ok() {
        panic!("boom");
    }

    mod nested {
        #[test]
        fn deep() {
            panic!("deep panic\nsecond line");
        }
    }
}
