package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestShow(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"Action":"start","Package":"example/b"}`,
		`{"Action":"run","Package":"example/b","Test":"TestSlow"}`,
		`{"Action":"start","Package":"example/a"}`,
		`{"Action":"output","Package":"example/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"pass","Package":"example/a","Test":"TestOK","Elapsed":0.1}`,
		`{"Action":"pass","Package":"example/a","Elapsed":0.2}`,
		`{"Action":"output","Package":"example/b","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}`,
		`{"Action":"output","Package":"example/b","Test":"TestSlow/sub","Output":"    x_test.go:3: got 1, want 2\n"}`,
		`{"Action":"fail","Package":"example/b","Test":"TestSlow/sub","Elapsed":1}`,
		`{"Action":"fail","Package":"example/b","Test":"TestSlow","Elapsed":1}`,
		`{"Action":"output","Package":"example/b","Output":"FAIL\n"}`,
		`{"Action":"fail","Package":"example/b","Elapsed":3}`,
		`{"ImportPath":"example/c","Action":"build-output","Output":"c.go:1: syntax error\n"}`,
		`{"ImportPath":"example/c","Action":"build-fail"}`,
		`{"Action":"skip","Package":"example/d"}`,
		`{"Action":"start","Package":"example/e"}`,
		`{"Action":"run","Package":"example/e","Test":"TestDone"}`,
		`{"Action":"output","Package":"example/e","Test":"TestDone","Output":"=== RUN   TestDone\n"}`,
		`{"Action":"pass","Package":"example/e","Test":"TestDone","Elapsed":0.1}`,
		`{"Action":"run","Package":"example/e","Test":"TestHangs"}`,
		`{"Action":"output","Package":"example/e","Test":"TestHangs","Output":"=== RUN   TestHangs\n"}`,
		`{"Action":"output","Package":"example/e","Test":"TestHangs","Output":"SIGQUIT: quit\n"}`,
		`{"Action":"output","Package":"example/e","Test":"TestHangs","Output":"goroutine 7 [chan receive, 29 minutes]:\n"}`,
		`{"Action":"output","Package":"example/e","Output":"FAIL\texample/e\t1784.6s\n"}`,
		`{"Action":"fail","Package":"example/e","Elapsed":1784.6}`,
		`go: downloading example.com/m v1.0.0`,
	}, "\n")
	var b strings.Builder
	s, err := show(strings.NewReader(in), &b)
	if err != nil {
		t.Fatal(err)
	}
	want := `ok   example/a 0.2s
FAIL example/b 3.0s
        x_test.go:3: got 1, want 2
    FAIL
FAIL example/c [build failed]
c.go:1: syntax error
-    example/d (no test files)
FAIL example/e 1784.6s
    TestHangs did not finish:
        === RUN   TestHangs
        SIGQUIT: quit
        goroutine 7 [chan receive, 29 minutes]:
    FAIL	example/e	1784.6s
go: downloading example.com/m v1.0.0

1 packages passed, 3 failed, 1 without tests
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if s.failed != 3 {
		t.Errorf("failed = %d, want 3 (a test, a build, a package that did not finish)", s.failed)
	}
}
