package com.example;

import static org.junit.Assert.assertTrue;
import org.junit.Test;

public class OtherTest {
    @Test
    public void passes() { assertTrue(true); }
}
