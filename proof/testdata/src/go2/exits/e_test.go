package exits

import (
	"os"
	"testing"
)

func TestFirst(t *testing.T) {}

func TestExits(t *testing.T) {
	os.Exit(3)
}
