package webhook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// edit changes a decoded payload before it is sent.
type edit func(t testing.TB, m map[string]any)

// set returns an edit that sets the value at a dotted path ("comment.body").
func set(path string, v any) edit {
	return func(t testing.TB, m map[string]any) {
		t.Helper()
		keys := strings.Split(path, ".")
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				t.Fatalf("payload has no object at %q (in %s)", k, path)
			}
			m = next
		}
		m[keys[len(keys)-1]] = v
	}
}

// body is set("comment.body", s), the edit most cases need.
func body(s string) edit { return set("comment.body", s) }

// asPR marks an issue_comment payload's issue as a pull request opened by an
// account of the given type ("User" or "Bot").
func asPR(authorType string) edit {
	return func(t testing.TB, m map[string]any) {
		set("issue.pull_request", map[string]any{"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"})(t, m)
		set("issue.user.type", authorType)(t, m)
	}
}

// payload reads testdata/name and applies edits.
func payload(t testing.TB, name string, edits ...edit) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if len(edits) == 0 {
		return raw
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	for _, e := range edits {
		e(t, m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
