package proof

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDebugDump(t *testing.T) {
	f := os.Getenv("DUMP")
	if f == "" {
		t.Skip()
	}
	out, _ := os.ReadFile(f)
	in := Input{Command: os.Getenv("CMD"), Output: string(out), Dir: os.Getenv("DIR"), ExitCode: 1}
	if rd := os.Getenv("REPORTS"); rd != "" {
		in.Reports = map[string][]byte{}
		ms, _ := filepath.Glob(rd + "/TEST-*.xml")
		for _, m := range ms {
			b, _ := os.ReadFile(m)
			in.Reports[m] = b
		}
	}
	r := Parse(in)
	fmt.Printf("formats=%v complete=%v warnings=%v\n", r.Formats, r.Complete, r.Warnings)
	for _, s := range r.Suites {
		fmt.Printf("SUITE %q %s err=%q files=%v\n   msg=%q\n", s.Name, s.Status, s.Error, s.Files, s.Message)
	}
	for _, x := range r.Tests {
		fmt.Printf("TEST %q [%s | %s] %s\n", x.ID, x.Suite, x.Name, x.Status)
		if x.Message != "" {
			fmt.Printf("   %s\n", strings.ReplaceAll(x.Message, "\n", "\n   "))
		}
	}
}
