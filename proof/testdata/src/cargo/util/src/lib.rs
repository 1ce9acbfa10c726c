pub fn id(x: i32) -> i32 { x }

#[cfg(test)]
mod tests {
    #[test]
    fn identity() {
        assert_eq!(super::id(3), 3);
    }
}
