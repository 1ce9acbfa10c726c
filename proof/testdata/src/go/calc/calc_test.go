package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 2); got != 4 {
		t.Errorf("Add(2, 2) = %d; want 4", got)
	}
}

func TestSkipped(t *testing.T) {
	t.Skip("needs a database")
}

func TestTable(t *testing.T) {
	for _, tc := range []struct {
		name       string
		a, b, want int
	}{
		{"small", 1, 1, 2},
		{"wrong", 2, 2, 5},
		{"with space", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Logf("adding %d and %d", tc.a, tc.b)
			if got := Add(tc.a, tc.b); got != tc.want {
				t.Errorf("Add(%d, %d) = %d; want %d\nsecond line of the message", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestFatal(t *testing.T) {
	t.Log("before")
	t.Fatal("boom")
}
