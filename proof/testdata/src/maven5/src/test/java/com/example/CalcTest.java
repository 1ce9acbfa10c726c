package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CalcTest {
    @Test
    void adds() {
        assertEquals(4, Calc.add(2, 2));
    }

    @Test
    void isWrong() {
        assertEquals(5, Calc.add(2, 2), "two and two");
    }

    @ParameterizedTest
    @CsvSource({"1,1,2", "2,2,5"})
    void table(int a, int b, int want) {
        assertEquals(want, Calc.add(a, b));
    }

    @Test
    @DisplayName("a display name")
    void displayed() {}

    @Disabled("slow")
    @Test
    void disabled() {}

    @Nested
    class Inner {
        @Test
        void innerFails() {
            assertEquals(1, 2);
        }
    }
}
