package com.example;

import static org.junit.Assert.assertEquals;
import org.junit.Ignore;
import org.junit.Test;

public class CalcTest {
    @Test
    public void adds() {
        assertEquals(4, Calc.add(2, 2));
    }

    @Test
    public void isWrong() {
        assertEquals("two and two", 5, Calc.add(2, 2));
    }

    @Test
    public void throwsError() {
        throw new IllegalStateException("boom\nsecond line");
    }

    @Ignore("slow")
    @Test
    public void ignored() {}
}
