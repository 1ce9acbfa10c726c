package rootfs

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recordingTransport answers every request with 200 and records its URL;
// it never touches the network.
type recordingTransport struct{ urls []string }

func (t *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.urls = append(t.urls, r.URL.String())
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

func TestPlainHTTPOnlyToLoopback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		sent bool
	}{
		{"http://127.0.0.1:5000/v2/", true},
		{"http://127.8.9.10/v2/", true},
		{"http://localhost:5000/v2/", true},
		{"http://[::1]:5000/v2/", true},
		{"http://10.0.0.7:5000/v2/", false},
		{"http://192.168.1.2/v2/", false},
		{"http://registry.example/v2/", false},
		{"http://127.0.0.1.example/v2/", false},
		{"https://10.0.0.7:5000/v2/", true},
		{"https://registry.example/v2/", true},
	}
	for _, tc := range tests {
		rec := &recordingTransport{}
		req, err := http.NewRequest(http.MethodGet, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = loopbackOnlyHTTP{inner: rec}.RoundTrip(req)
		if sent := len(rec.urls) == 1; sent != tc.sent || (err == nil) != tc.sent {
			t.Errorf("%s: sent %v (err %v), want sent %v", tc.url, sent, err, tc.sent)
		}
	}
}

func TestClean(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, want string
		unsafe     bool
	}{
		{"etc/passwd", "etc/passwd", false},
		{"./etc/passwd", "etc/passwd", false},
		{"/etc/passwd", "etc/passwd", false},
		{"etc/../usr/bin", "usr/bin", false},
		{"./", ".", false},
		{"a/b/../../..", "", true},
		{"../etc", "", true},
		{"a/../../etc", "", true},
		{"/../etc", "", true},
		{"..", "", true},
		{"..foo/bar", "..foo/bar", false},
	}
	for _, tc := range tests {
		got, err := clean(tc.name)
		var ue *unsafeError
		if got != tc.want || errors.As(err, &ue) != tc.unsafe {
			t.Errorf("clean(%q) = %q, %v; want %q, unsafe %v", tc.name, got, err, tc.want, tc.unsafe)
		}
	}
}

func TestPathFirst(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env, want []string
	}{
		{nil, []string{defaultPath}},
		{[]string{"A=1", "PATH=/x", "B=2"}, []string{"PATH=/x", "A=1", "B=2"}},
		{[]string{"PATH=/x"}, []string{"PATH=/x"}},
		{[]string{"A=1"}, []string{defaultPath, "A=1"}},
		{[]string{"PATHX=1"}, []string{defaultPath, "PATHX=1"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, pathFirst(tc.env)); diff != "" {
			t.Errorf("pathFirst(%q) (-want +got):\n%s", tc.env, diff)
		}
	}
}

func TestParsePlatform(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Platform
		ok   bool
	}{
		{"linux/amd64", Platform{OS: "linux", Architecture: "amd64"}, true},
		{"linux/arm64/v8", Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, true},
		{"linux", Platform{}, false},
		{"linux//v8", Platform{}, false},
		{"a/b/c/d", Platform{}, false},
	} {
		got, err := ParsePlatform(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParsePlatform(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
