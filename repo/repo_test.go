package repo

import "testing"

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Name
		ok   bool
	}{
		{"octo/hello", Name{"octo", "hello"}, true},
		{"Octo-Cat/hello.go_x", Name{"Octo-Cat", "hello.go_x"}, true},
		{"a/b/c", Name{}, false},
		{"../x", Name{}, false},
		{"x/..", Name{}, false},
		{"./x", Name{}, false},
		{"x", Name{}, false},
		{"/x", Name{}, false},
		{"x/", Name{}, false},
		{"", Name{}, false},
		{"a b/c", Name{}, false},
		{"a/%2e%2e", Name{}, false},
	} {
		got, err := Parse(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestKeyAndEqual(t *testing.T) {
	t.Parallel()
	a, b := Name{"Octo", "Hello"}, Name{"octo", "hello"}
	if !a.Equal(b) || a.Key() != "octo/hello" || a.String() != "Octo/Hello" {
		t.Errorf("Equal %v, Key %q, String %q", a.Equal(b), a.Key(), a.String())
	}
}
