package broken

import "testing"

func TestNew(t *testing.T) {
	if New() != 2 {
		t.Fatal("want 2")
	}
}
